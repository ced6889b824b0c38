"""``skillstate hook claude|codex``: a PreToolUse event in, the rewritten event out; anything
not allowed, another tool or an unreadable event left untouched (no output, exit 0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillstate.shell import Host, answer

SRC = Path(__file__).parents[2] / "src"


def _event(command: object, cwd: Path, tool: str = "Bash") -> str:
    return json.dumps(
        {
            "session_id": "abc123",
            "cwd": str(cwd),
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": {"command": command, "description": "look", "timeout": 120000},
            "tool_use_id": "toolu_01",
        }
    )


@pytest.mark.parametrize("host", list(Host))
def test_an_allowed_command_comes_back_rewritten(tmp_path: Path, host: Host) -> None:
    reply = answer(_event("git diff HEAD~1 -- 'a b.py'", tmp_path), host)
    assert reply.note == ""
    out = json.loads(reply.output)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    assert out["permissionDecision"] == "allow"
    assert out["updatedInput"] == {
        "command": "skillstate shell -- git diff 'HEAD~1' -- 'a b.py'",
        "description": "look",
        "timeout": 120000,
    }


@pytest.mark.parametrize(
    "command", ["git push", "ls | wc", "rm -rf .", "cat /etc/passwd", "FOO=1 ls", "ls\nrm x"]
)
@pytest.mark.parametrize("host", list(Host))
def test_anything_else_is_left_untouched(tmp_path: Path, host: Host, command: str) -> None:
    assert answer(_event(command, tmp_path), host).output == ""


def test_other_tools_and_bad_events_are_left_untouched(tmp_path: Path) -> None:
    assert answer(_event("ls", tmp_path, tool="Read"), Host.CLAUDE).output == ""
    for text in ("not json", "[]", '{"tool_name": "Bash"}'):
        reply = answer(text, Host.CLAUDE)
        assert reply.output == "" and "left untouched" in reply.note


def test_codex_words_are_rewritten_in_place(tmp_path: Path) -> None:
    event = _event(["bash", "-lc", "ls -la"], tmp_path, tool="shell")
    out = json.loads(answer(event, Host.CODEX).output)["hookSpecificOutput"]
    assert out["updatedInput"]["command"] == ["bash", "-lc", "skillstate shell -- ls -la"]
    assert answer(_event(["ls", "-la"], tmp_path, tool="shell"), Host.CODEX).output == ""


def test_the_program_is_quoted(tmp_path: Path) -> None:
    reply = answer(_event("ls", tmp_path), Host.CLAUDE, program="/opt/my tools/skillstate")
    command = json.loads(reply.output)["hookSpecificOutput"]["updatedInput"]["command"]
    assert command == "'/opt/my tools/skillstate' shell -- ls"


def test_the_hook_command_reads_stdin_and_always_exits_0(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    run = [sys.executable, "-m", "skillstate", "hook", "claude"]
    done = subprocess.run(run, input=_event("ls", tmp_path).encode(), capture_output=True, env=env)
    assert done.returncode == 0
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["updatedInput"]["command"] == "skillstate shell -- ls"
    done = subprocess.run(run, input=b"{oops", capture_output=True, env=env)
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"left untouched" in done.stderr
