"""``skillstate hook`` and ``skillstate shell`` as an agent host runs them go through
``cli.fast`` before click is imported: they load none of the gateway (the shape, not the time;
``skillstate bench startup`` times them), answer exactly as the click commands do, and leave every
other command line to the click group."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from command_probe import SRC, probe

from skillstate.cli import fast
from skillstate.cli.main import cli
from skillstate.cli.shell import shell_command
from skillstate.integrations import claude, codex
from skillstate.integrations.model import Locations
from skillstate.integrations.shell.run import Outcome
from skillstate.outputs.commands import reducers
from skillstate.testing.shell_archive import archived_run

GATEWAY = ("aiohttp", "pydantic", "pydantic_core", "click", "rich", "asyncio")
"""Packages neither command may import on its fast path; and of skillstate's own, these:"""
GATEWAY_PARTS = (
    "skillstate.server",
    "skillstate.pipeline",
    "skillstate.state",
    "skillstate.config",
    "skillstate.storage",
    "skillstate.archive",
    "skillstate.conversation",
    "skillstate.outputs",
    "skillstate.cli.group",
    "skillstate.cli.options",
    "skillstate.integrations.installer",
    "skillstate.integrations.claude",
    "skillstate.integrations.codex",
)


def _probe(cwd: Path, *args: str, stdin: str = "", **env: str) -> tuple[int, str, list[str]]:
    """Run ``skillstate ARGS`` as the console script does, in ``cwd`` with a home of its own;
    its exit code, stdout, and the modules it imported."""
    done = probe(*args, cwd=cwd, stdin=stdin, env={"HOME": str(cwd.parent / "home"), **env})
    return int(done.code or 0), done.stdout, done.modules


def _gateway(modules: list[str]) -> list[str]:
    return [
        name
        for name in modules
        if name.split(".")[0] in GATEWAY
        or any(name == part or name.startswith(part + ".") for part in GATEWAY_PARTS)
    ]


def _event(command: str, cwd: Path) -> str:
    tool = {"command": command}
    return json.dumps(
        {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": tool, "cwd": str(cwd)}
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\n")
    (root / "big.txt").write_text("".join(f"line {n} of a long file\n" for n in range(400)))
    return root


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_the_hook_imports_none_of_the_gateway(project: Path, host: str) -> None:
    code, stdout, modules = _probe(project, "hook", host, stdin=_event("ls a.txt", project))
    assert code == 0
    assert json.loads(stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert _gateway(modules) == []


def test_a_shell_output_shown_as_it_is_imports_none_of_the_gateway(project: Path) -> None:
    code, stdout, modules = _probe(project, "shell", "--", "cat", "a.txt")
    assert (code, stdout) == (0, "one\ntwo\n")
    assert _gateway(modules) == []


def test_the_check_sees_the_gateway_where_it_is_imported(project: Path) -> None:
    """A reduced output imports the reducers and the archive: the check is not blind."""
    data = project / "data"
    code, stdout, modules = _probe(
        project, "shell", "--data-dir", str(data), "--", "cat", "big.txt"
    )
    assert code == 0 and stdout.startswith("[skillstate: output reduced on purpose")
    assert "skillstate.outputs.commands.reducers" in _gateway(modules)
    code, _, modules = _probe(project, "hook", "nobody")  # left to click
    assert code == 2 and "click" in _gateway(modules)


def _click_hook(host: str, event: str, env: dict[str, str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["hook", host], input=event, env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("host", "command"),
    [
        ("claude", "ls a.txt"),
        ("claude", "python -m pytest"),
        ("claude", "rm a.txt"),
        ("codex", "ls a.txt"),
        ("codex", "python -m pytest"),
        ("claude", None),
    ],
)
def test_the_hook_answers_as_the_click_command_does(
    project: Path, host: str, command: str | None
) -> None:
    event = "not json" if command is None else _event(command, project)
    done = subprocess.run(
        [sys.executable, "-m", "skillstate", "hook", host],
        cwd=project,
        input=event,
        env={**os.environ, "PYTHONPATH": SRC, "HOME": str(project.parent / "home")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    expected = _click_hook(host, event, {"HOME": str(project.parent / "home")})
    assert (done.returncode, done.stdout, done.stderr) == expected


@pytest.mark.parametrize(
    "args",
    [
        ["--", "ls", "-la"],
        ["ls", "-la"],
        ["--via-rtk", "--", "git", "status"],
        ["--project", "{root}", "--", "ls"],
        ["--project={root}", "ls", "--help"],
        ["--data-dir", "d", "--config=c.toml", "--", "--", "x"],
        ["--data-dir=d", "-", "x"],
    ],
)
def test_the_shell_words_are_read_as_click_reads_them(project: Path, args: list[str]) -> None:
    words = [arg.format(root=project) for arg in args]
    parsed = fast._shell_args(words)
    assert parsed is not None
    command, options = parsed
    params = shell_command.make_context("shell", list(words)).params
    assert tuple(command) == params["command"]
    assert options.get("--project") == (None if params["project"] is None else str(project))
    assert ("--via-rtk" in options) == params["via_rtk"]
    assert options.get("--data-dir") == params["data_dir"]
    assert options.get("--config") == params["config_path"]


@pytest.mark.parametrize(
    "args",
    [
        ["shell"],
        ["shell", "--"],
        ["shell", "--help"],
        ["shell", "--port", "1", "--", "ls"],
        ["shell", "--project", "/no/such/folder", "--", "ls"],
        ["hook"],
        ["hook", "other"],
        ["hook", "claude", "--help"],
        ["hook", "claude", "--program"],
        ["--data-dir", "x", "shell", "--", "ls"],
        ["config"],
        [],
    ],
)
def test_every_other_command_line_is_left_to_click(args: list[str]) -> None:
    assert fast.run(args) is None


@pytest.mark.parametrize("args", [["hook", "claude", "--help"], ["shell", "--help"]])
def test_help_is_clicks(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0 and result.stdout.startswith("Usage: skillstate")


@pytest.mark.parametrize(
    "env",
    [{}, {"CLAUDE_CONFIG_DIR": "/c/claude", "CODEX_HOME": "/c/codex"}],
)
def test_the_rule_files_are_the_hosts_own(tmp_path: Path, env: dict[str, str]) -> None:
    environ = {"HOME": str(tmp_path), **env}
    where = Locations(environ, tmp_path)
    assert fast.rule_files("claude", environ)[0] == claude.settings_path(where)
    rules = codex.config_path(where).parent / "rules"
    if not env:
        rules.mkdir(parents=True)
        (rules / "b.rules").write_text("")
        (rules / "a.rules").write_text("")
    assert fast.rule_files("codex", environ) == sorted(rules.glob("*.rules"))


def test_a_small_output_is_one_the_reducers_leave_as_it_is() -> None:
    assert fast.SMALL_OUTPUT == reducers.MIN_CHARS


def test_bad_settings_stop_the_shell_before_it_runs(project: Path) -> None:
    env = {"SKILLSTATE_ARCHIVE_MAX_MB": "many"}
    code, stdout, _ = _probe(project, "shell", "--", "cat", "a.txt", **env)
    assert (code, stdout) == (2, "")
    done = subprocess.run(
        [sys.executable, "-m", "skillstate", "shell", "--", "cat", "a.txt"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": SRC, "HOME": str(project.parent / "home"), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stderr == (
        "config error: archive_max_mb='many' from environment SKILLSTATE_ARCHIVE_MAX_MB: "
        "not an integer\n"
    )


def test_a_reader_that_leaves_early_gets_no_traceback(project: Path) -> None:
    """``skillstate shell -- cat big.txt | head -1``: the pipe closes before the shell writes;
    it ends quietly with status 1, as click's commands do."""
    words = [sys.executable, "-m", "skillstate", "shell", "--data-dir", str(project.parent / "d")]
    process = subprocess.Popen(
        [*words, "--", "cat", "big.txt"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": SRC, "HOME": str(project.parent / "home")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    with process.stderr:
        stderr = process.stderr.read().decode()
    assert (process.wait(timeout=60), stderr) == (1, "")


def test_what_the_shell_archives_the_store_reads_back_exactly(project: Path) -> None:
    """The first output creates the database through the store; the second is one file and one
    row (``integrations.shell.archiving``); both come back exactly."""
    data = project.parent / "data"
    refs = []
    for words in (["cat", "big.txt"], ["grep", "-n", "line", "big.txt"]):
        code, stdout, _ = _probe(project, "shell", "--data-dir", str(data), "--", *words)
        assert code == 0
        refs.append((words, next(w for w in stdout.split() if w.startswith("ar_"))))

    for words, ref in refs:
        direct = subprocess.run(words, cwd=project, capture_output=True, check=True)
        assert asyncio.run(archived_run(data, ref)) == (
            words,
            Outcome(direct.stdout, direct.stderr, 0),
        )


@pytest.mark.parametrize("command", ["hook", "shell"])
def test_their_help_imports_neither_the_settings_nor_the_gateway(
    project: Path, command: str
) -> None:
    code, stdout, modules = _probe(project, command, "--help")
    assert code == 0 and stdout.startswith(f"Usage: skillstate {command}")
    assert [m for m in _gateway(modules) if m.split(".")[0] != "click"] == [
        "skillstate.cli.group",
        "skillstate.cli.options",
    ]
