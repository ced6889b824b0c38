"""``skillstate bench startup``: the start-up benchmark runs each command as a new process and
reports medians against each group's floor (``python -c 'import click, rich'`` for the help,
``python -c 'import json'`` for the hook, ``ls`` for the shell)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from skillstate.bench.startup import Arm, Target, Timing, arms, format_report, hook_event
from skillstate.cli.main import cli
from skillstate.integrations.shell import Host, answer


def test_the_report_gives_each_median_and_its_ratio_to_its_floor() -> None:
    helped = Target(ratio=4)
    report = format_report(
        [
            Timing(Arm("floor", ("python",)), (0.05, 0.04, 0.06)),
            Timing(Arm("skillstate --help", ("skillstate", "--help"), helped), (0.10, 0.08, 0.3)),
            Timing(Arm("skillstate --version", ("skillstate", "-V"), helped), (0.21, 0.21, 0.21)),
            Timing(Arm("json", ("python",)), (0.02, 0.02, 0.02)),
            Timing(Arm("hook", ("skillstate", "hook"), Target(ratio=5)), (0.09, 0.09, 0.09)),
            Timing(Arm("ls", ("ls",)), (0.002, 0.002, 0.002)),
            Timing(Arm("shell", ("skillstate", "shell"), Target(added_s=0.1)), (0.2, 0.2, 0.2)),
        ]
    ).splitlines()
    assert report[1].split() == ["floor", "50.0", "1.00x"]
    assert report[2].split()[-6:] == ["100.0", "2.00x", "at", "most", "4x:", "ok"]
    assert report[3].split()[-6:] == ["210.0", "4.20x", "at", "most", "4x:", "OVER"]
    assert report[4].split() == ["json", "20.0", "1.00x"]
    assert report[5].split()[-2:] == ["5x:", "ok"]
    assert report[7].split()[-7:] == ["+198.0", "ms,", "at", "most", "+100", "ms:", "OVER"]
    assert report[-1].startswith("median of 3 runs each, each a new process")


ARMS = [
    "python -c 'import click, rich'",
    "skillstate --help",
    "skillstate --version",
    "python -c 'import json'",
    "skillstate hook claude (git status)",
    "ls",
    "skillstate shell -- ls",
]
"""The arms, in the order they are measured and printed."""


def test_the_arms_run_the_command_line_this_interpreter_has(tmp_path: Path) -> None:
    chosen = arms(tmp_path)
    names = [arm.name for arm in chosen]
    assert names == ARMS
    floors = [arm for arm in chosen if arm.target is None]
    assert [arm.argv[1:] for arm in floors[:2]] == [
        ("-c", "import click, rich"),
        ("-c", "import json"),
    ]
    helped, version, hook, shell = (arm for arm in chosen if arm.target is not None)
    assert helped.argv[:-1] == version.argv[:-1] == hook.argv[:-2] == shell.argv[:-3]
    assert hook.argv[-2:] == ("hook", "claude") and shell.argv[-3:] == ("shell", "--", "ls")
    assert hook.cwd == shell.cwd == floors[2].cwd == str(tmp_path)


def test_the_hook_event_is_one_the_hook_rewrites(tmp_path: Path) -> None:
    reply = answer(hook_event(tmp_path).decode(), Host.CLAUDE)
    output = json.loads(reply.output)["hookSpecificOutput"]
    assert output["permissionDecision"] == "allow"
    assert output["updatedInput"]["command"].endswith("-- git status")


def test_the_command_measures_every_arm() -> None:
    result = CliRunner().invoke(cli, ["bench", "startup", "--rounds", "1"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split("  ")[0] for line in lines[1:8]] == ARMS
    assert all(re.search(r"\d+\.\d+x", line) for line in lines[1:8])
    assert all(line.endswith(("ok", "OVER")) for line in (lines[2], lines[3], lines[5], lines[7]))
