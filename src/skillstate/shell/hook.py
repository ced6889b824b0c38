"""``skillstate hook codex|claude``: the host's PreToolUse event in, the rewritten call out.

Both hosts send one JSON object on stdin, ``{"hook_event_name": "PreToolUse", "tool_name":
"Bash", "tool_input": {"command": "...", ...}, "cwd": "...", ...}``, and read, on stdout,
``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
"updatedInput": {...}}}``, the tool input with its command replaced. Claude Code documents
this shape; Codex's hook schema (``pre-tool-use.command.output.schema.json``) has the same
fields, and Codex 0.171 sends its ``exec_command`` calls as tool ``Bash`` with the command in
``tool_input.command`` (tests/e2e/test_shell_hook_clients.py runs both hosts). Codex may
also send the command as words (``["bash", "-lc", "CMD"]``): then ``CMD`` is rewritten in
place.

A command the allowlist refuses, another tool, or an event that cannot be read gives no
output at all (exit 0), so the host runs the call untouched; the last also gives a note for
stderr. ``"allow"`` skips the host's prompt for the rewritten call only (the host's deny
rules still apply): the allowlist admits read-only commands and test runners alone, and Codex
takes an ``updatedInput`` with no other decision.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from skillstate.shell.allow import Decision, decide

_SHELLS = frozenset({"bash", "sh", "zsh"})
_SHELL_FLAGS = frozenset({"-c", "-lc"})


class Host(StrEnum):
    """The agents whose PreToolUse hook this answers."""

    CLAUDE = "claude"
    CODEX = "codex"


_TOOLS = {
    Host.CLAUDE: frozenset({"Bash"}),
    Host.CODEX: frozenset({"Bash", "shell", "local_shell", "exec_command"}),
}


@dataclass(frozen=True, slots=True)
class Reply:
    """What the hook prints: ``output`` on stdout (empty: run untouched), ``note`` on stderr."""

    output: str = ""
    note: str = ""


def answer(event_text: str, host: Host, *, program: str = "skillstate") -> Reply:
    """The reply to one PreToolUse event (see the module docstring)."""
    try:
        event = json.loads(event_text)
    except ValueError as error:
        return Reply(note=f"skillstate hook: not a JSON event ({error}); left untouched")
    if not isinstance(event, dict) or not isinstance(event.get("tool_input"), dict):
        return Reply(note="skillstate hook: not a PreToolUse tool event; left untouched")
    if event.get("tool_name") not in _TOOLS[host]:
        return Reply()
    tool_input: dict[str, Any] = event["tool_input"]
    cwd = event.get("cwd")
    project = Path(cwd) if isinstance(cwd, str) and cwd else Path.cwd()
    updated = _rewritten(tool_input.get("command"), project, program)
    if updated is None:
        return Reply()
    reply = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "skillstate shell: a read-only command, output reduced",
            "updatedInput": {**tool_input, "command": updated},
        }
    }
    return Reply(output=json.dumps(reply, ensure_ascii=False))


def _rewritten(command: object, project: Path, program: str) -> str | list[str] | None:
    if isinstance(command, str):
        return rewrite(command, project, program)
    words = command if isinstance(command, list) else None
    if words is None or len(words) != 3 or not all(isinstance(w, str) for w in words):
        return None
    shell, flag, text = words
    if Path(shell).name not in _SHELLS or flag not in _SHELL_FLAGS:
        return None
    new = rewrite(text, project, program)
    return None if new is None else [shell, flag, new]


def rewrite(command: str, project: Path, program: str = "skillstate") -> str | None:
    """``program shell -- CMD`` for an allowed command, else ``None``."""
    decision: Decision = decide(command, project)
    if not decision.allowed:
        return None
    return f"{shlex.quote(program)} shell -- {decision.rendered}"
