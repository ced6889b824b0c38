"""``skillstate bench startup``: the start-up benchmark runs each command as a new process and
reports medians against the floor (``python -c 'import click, rich'``)."""

from __future__ import annotations

import re

from click.testing import CliRunner

from skillstate.bench.startup import Arm, Timing, arms, format_report
from skillstate.cli.main import cli


def test_the_report_gives_each_median_and_its_ratio_to_the_floor() -> None:
    floor, helped, slow = (
        Arm("floor", ("python",)),
        Arm("skillstate --help", ("skillstate", "--help")),
        Arm("skillstate --version", ("skillstate", "--version")),
    )
    report = format_report(
        [
            Timing(floor, (0.05, 0.04, 0.06)),
            Timing(helped, (0.10, 0.08, 0.30)),
            Timing(slow, (0.21, 0.21, 0.21)),
        ]
    ).splitlines()
    assert report[1].split() == ["floor", "50.0", "1.00x"]
    assert report[2].split()[-3:] == ["100.0", "2.00x", "ok"]
    assert report[3].split()[-3:] == ["210.0", "4.20x", "OVER"]
    assert report[-1] == "median of 3 runs each, each a new process"


def test_the_arms_run_the_command_line_this_interpreter_has() -> None:
    floor, helped, version = arms()
    assert floor.argv[1:] == ("-c", "import click, rich")
    assert helped.argv[-1] == "--help" and version.argv[-1] == "--version"
    assert helped.argv[:-1] == version.argv[:-1]


def test_the_command_measures_every_arm() -> None:
    result = CliRunner().invoke(cli, ["bench", "startup", "--rounds", "1"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split("  ")[0] for line in lines[1:4]] == [
        "python -c 'import click, rich'",
        "skillstate --help",
        "skillstate --version",
    ]
    assert all(re.search(r"\d+\.\d+x", line) for line in lines[1:4])
