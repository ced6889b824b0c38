"""``skillstate hook codex|claude``: the host's PreToolUse event in, the rewritten call out.

Both hosts send one JSON object on stdin, ``{"hook_event_name": "PreToolUse", "tool_name":
"Bash", "tool_input": {"command": "...", ...}, "cwd": "...", ...}``, and read, on stdout,
``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": ...,
"updatedInput": {...}}}``, the tool input with its command replaced by ``skillstate shell
--project ROOT -- CMD``. Codex 0.171 sends its ``exec_command`` calls as tool ``Bash`` with
only ``tool_input.command``, and the command's own directory (the model's ``workdir``) as the
event's ``cwd``; a ``tool_input.workdir`` is honoured too. A command sent as words (``["bash",
"-lc", "CMD"]``) is rewritten in place (tests/e2e/test_shell_hook_clients.py and
test_shell_hook_prompts.py run both hosts).

What each answer grants (docs/shell.md, "Threat model"):

* ``allow`` skips the host's prompt (its deny rules still apply). It is given only for a
  command the allowlist reads as read-only by construction (``allow.decide``: a table of the
  options each program admits, every path in the project root).
* A use that runs code (test runners, linters) is never ``allow``: Claude Code gets ``ask``
  with the rewritten input, so its user still decides, on the command that will run; Codex,
  which refuses ``ask`` and an ``updatedInput`` without ``allow``, gets nothing, and runs the
  call untouched under its own approval policy and rules (checked with the real CLIs).
* A Codex call that asks to run outside its sandbox (``sandbox_permissions``,
  ``with_escalated_permissions``, ``justification``, ``prefix_rule``) gets nothing. Codex
  0.171 does not pass these to the hook, and keeps its sandbox and escalation approval for a
  call its hook allowed; the check holds if a later Codex passes them.
* A command whose program a deny or ask rule of the user's names (``rules.named``: the host
  would match its rule against the rewritten command, which it no longer names) gets nothing.
* A refused command, another tool, or an event that cannot be read gives no output at all
  (exit 0), so the host runs the call untouched, asking as it would have; the last also gives a
  note for stderr.

The project root is the host's own project: Claude Code's project directory (the
``CLAUDE_PROJECT_DIR`` it gives its hooks, else the event's ``cwd``), Codex's session
directory (the event's ``cwd``); the command runs in the event's ``cwd`` (Codex: its
``workdir``), which must lie inside it.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from skillstate.integrations.shell.allow import Decision, Place, decide
from skillstate.integrations.shell.rules import EVERY, named

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


_ESCALATION = ("with_escalated_permissions", "justification", "prefix_rule")
_CLAUDE_PROJECT_FILES = ("settings.json", "settings.local.json")


def answer(
    event_text: str,
    host: Host,
    *,
    program: str = "skillstate",
    project: str | None = None,
    home: Path | None = None,
    rule_files: Sequence[Path] = (),
) -> Reply:
    """The reply to one PreToolUse event (see the module docstring); ``project`` is Claude
    Code's project directory when it gave one; ``rule_files`` the host's permission rules
    outside the project (Claude Code's project settings are read from the root)."""
    try:
        event = json.loads(event_text)
    except ValueError as error:
        return Reply(note=f"skillstate hook: not a JSON event ({error}); left untouched")
    if not isinstance(event, dict) or not isinstance(event.get("tool_input"), dict):
        return Reply(note="skillstate hook: not a PreToolUse tool event; left untouched")
    if event.get("tool_name") not in _TOOLS[host]:
        return Reply()
    tool_input: dict[str, Any] = event["tool_input"]
    place = _place(event, tool_input, host, project, home)
    if place is None or _escalated(tool_input):
        return Reply()
    found = _rewritten(tool_input.get("command"), place, program)
    if found is None:
        return Reply()
    updated, decision = found
    if decision.runs_code and host is Host.CODEX:
        return Reply()
    if _ruled(host, decision.argv[0], place, rule_files):
        return Reply()
    grant, why = (
        ("ask", "skillstate shell: runs the project's code, so you decide; output reduced")
        if decision.runs_code
        else ("allow", "skillstate shell: a read-only command, output reduced")
    )
    reply = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": grant,
            "permissionDecisionReason": why,
            "updatedInput": {**tool_input, "command": updated},
        }
    }
    return Reply(output=json.dumps(reply, ensure_ascii=False))


def _place(
    event: dict[str, Any],
    tool_input: dict[str, Any],
    host: Host,
    project: str | None,
    home: Path | None,
) -> Place | None:
    """Where the call runs, or ``None`` when the event does not say (nothing is allowed)."""
    cwd = event.get("cwd")
    if not isinstance(cwd, str) or not Path(cwd).is_absolute():
        return None
    root = project if host is Host.CLAUDE and project else cwd
    workdir = tool_input.get("workdir") if host is Host.CODEX else None
    if workdir is not None and not isinstance(workdir, str):
        return None
    return Place.of(Path(root), Path(cwd) / (workdir or ""), home)


def _ruled(host: Host, program: str, place: Place, rule_files: Sequence[Path]) -> bool:
    """Whether a deny or ask rule of the user's names ``program`` (or every command)."""
    files = list(rule_files)
    if host is Host.CLAUDE:
        files += [place.root / ".claude" / name for name in _CLAUDE_PROJECT_FILES]
    texts = []
    for file in files:
        try:
            texts.append(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    names = named(host.value, texts)
    return EVERY in names or program in names


def _escalated(tool_input: dict[str, Any]) -> bool:
    """Whether a Codex call asks to run outside its sandbox (or to be approved for good)."""
    permissions = tool_input.get("sandbox_permissions")
    if permissions not in (None, "use_default"):
        return True
    return any(tool_input.get(key) for key in _ESCALATION)


def _rewritten(
    command: object, place: Place, program: str
) -> tuple[str | list[str], Decision] | None:
    if isinstance(command, str):
        return _rewrite(command, place, program)
    words = command if isinstance(command, list) else None
    if words is None or len(words) != 3 or not all(isinstance(w, str) for w in words):
        return None
    shell, flag, text = words
    if Path(shell).name not in _SHELLS or flag not in _SHELL_FLAGS:
        return None
    found = _rewrite(text, place, program)
    return None if found is None else ([shell, flag, found[0]], found[1])


def _rewrite(command: str, place: Place, program: str) -> tuple[str, Decision] | None:
    decision = decide(command, place)
    if not decision.allowed:
        return None
    return _line(program, place.root, decision), decision


def rewrite(command: str, place: Place | Path, program: str = "skillstate") -> str | None:
    """``program shell --project ROOT -- CMD`` for an allowed command, else ``None``."""
    found = _rewrite(command, place if isinstance(place, Place) else Place.of(place), program)
    return None if found is None else found[0]


def _line(program: str, root: Path, decision: Decision) -> str:
    project = shlex.quote(str(root))
    return f"{shlex.quote(program)} shell --project {project} -- {decision.rendered}"
