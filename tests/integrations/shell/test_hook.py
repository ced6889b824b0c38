"""``skillstate hook claude|codex``: a PreToolUse event in, the rewritten event out: ``allow``
for a read-only command only; a use that runs code rewritten with ``ask`` (Claude Code) or left
untouched (Codex); anything refused, another tool, an unreadable event, a call outside the
project, a project that is the home directory, or a Codex call asking to leave its sandbox left
untouched (no output, exit 0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skillstate.integrations.shell import Host, answer

SRC = Path(__file__).parents[3] / "src"


def _event(command: object, cwd: Path, tool: str = "Bash", **tool_input: Any) -> str:
    return json.dumps(
        {
            "session_id": "abc123",
            "cwd": str(cwd),
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": {
                "command": command,
                "description": "look",
                "timeout": 120000,
                **tool_input,
            },
            "tool_use_id": "toolu_01",
        }
    )


def _out(reply_text: str) -> dict[str, object]:
    out: dict[str, object] = json.loads(reply_text)["hookSpecificOutput"]
    return out


@pytest.mark.parametrize("host", list(Host))
def test_an_allowed_command_comes_back_rewritten(tmp_path: Path, host: Host) -> None:
    reply = answer(_event("git diff HEAD~1 -- 'a b.py'", tmp_path), host)
    assert reply.note == ""
    out = json.loads(reply.output)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    assert out["permissionDecision"] == "allow"
    assert out["updatedInput"] == {
        "command": f"skillstate shell --project {tmp_path} -- git diff 'HEAD~1' -- 'a b.py'",
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
    shell = f"skillstate shell --project {tmp_path} -- ls -la"
    assert out["updatedInput"]["command"] == ["bash", "-lc", shell]
    assert answer(_event(["ls", "-la"], tmp_path, tool="shell"), Host.CODEX).output == ""


def test_the_program_is_quoted(tmp_path: Path) -> None:
    reply = answer(_event("ls", tmp_path), Host.CLAUDE, program="/opt/my tools/skillstate")
    command = json.loads(reply.output)["hookSpecificOutput"]["updatedInput"]["command"]
    assert command == f"'/opt/my tools/skillstate' shell --project {tmp_path} -- ls"


def test_the_hook_command_reads_stdin_and_always_exits_0(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    run = [sys.executable, "-m", "skillstate", "hook", "claude"]
    done = subprocess.run(run, input=_event("ls", tmp_path).encode(), capture_output=True, env=env)
    assert done.returncode == 0
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["updatedInput"]["command"] == f"skillstate shell --project {tmp_path} -- ls"
    done = subprocess.run(run, input=b"{oops", capture_output=True, env=env)
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"left untouched" in done.stderr


def test_code_runs_only_with_the_users_say(tmp_path: Path) -> None:
    """A test runner is rewritten for Claude Code with ``ask``, so its user decides on the
    command that will run; Codex takes a rewrite only with ``allow``, so it gets nothing."""
    event = _event("pytest -q tests", tmp_path)
    out = _out(answer(event, Host.CLAUDE).output)
    assert out["permissionDecision"] == "ask"
    assert out["updatedInput"] == {
        "command": f"skillstate shell --project {tmp_path} -- pytest -q tests",
        "description": "look",
        "timeout": 120000,
    }
    assert answer(event, Host.CODEX).output == ""


@pytest.mark.parametrize("host", list(Host))
def test_nothing_is_allowed_in_a_session_at_home(tmp_path: Path, host: Host) -> None:
    (tmp_path / ".ssh").mkdir()
    for cwd in (tmp_path, tmp_path / ".ssh"):
        assert answer(_event("cat id_rsa", cwd), host, home=tmp_path).output == ""
    assert answer(_event("ls", tmp_path.parent), host, home=tmp_path).output == ""
    assert answer(_event("ls", Path("/")), host).output == ""
    assert answer(_event("ls", Path("/etc")), host).output == ""


def test_claude_codes_project_directory_is_the_root(tmp_path: Path) -> None:
    """The project is what Claude Code says it is; a shell that moved out of it (``cd ..``
    persists in its Bash tool) gets nothing allowed."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    reply = answer(_event("ls", project / "src"), Host.CLAUDE, project=str(project))
    assert _out(reply.output)["updatedInput"] == {
        "command": f"skillstate shell --project {project} -- ls",
        "description": "look",
        "timeout": 120000,
    }
    assert answer(_event("cat ../README", project / "src"), Host.CLAUDE, project=str(project))
    for cwd in (tmp_path, Path("/tmp")):
        assert answer(_event("ls", cwd), Host.CLAUDE, project=str(project)).output == ""


def test_codex_workdir_is_where_the_command_runs(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "notes").write_text("x")
    reply = answer(_event("cat ../notes", tmp_path, workdir="sub"), Host.CODEX)
    assert _out(reply.output)["permissionDecision"] == "allow"
    for workdir in ("..", "/etc", str(tmp_path.parent)):
        assert answer(_event("ls", tmp_path, workdir=workdir), Host.CODEX).output == ""
    assert answer(_event("cat ../../x", tmp_path, workdir="sub"), Host.CODEX).output == ""
    assert answer(_event("ls", tmp_path, workdir=3), Host.CODEX).output == ""


@pytest.mark.parametrize(
    "escalation",
    [
        {"sandbox_permissions": "require_escalated"},
        {"with_escalated_permissions": True},
        {"justification": "needs the network"},
        {"prefix_rule": ["ls"]},
    ],
)
def test_a_codex_call_asking_to_leave_its_sandbox_is_left_untouched(
    tmp_path: Path, escalation: dict[str, object]
) -> None:
    assert answer(_event("ls", tmp_path, **escalation), Host.CODEX).output == ""
    plain = _event("ls", tmp_path, sandbox_permissions="use_default")
    assert _out(answer(plain, Host.CODEX).output)["permissionDecision"] == "allow"


def test_an_event_without_its_directory_is_left_untouched(tmp_path: Path) -> None:
    event = json.loads(_event("ls", tmp_path))
    for cwd in (None, "", "relative/dir", 7):
        event["cwd"] = cwd
        assert answer(json.dumps(event), Host.CLAUDE).output == ""
