"""The shell lane's PreToolUse hook (``skillstate hook HOST``) as each host's config holds it,
for ``skillstate integrate HOST --install --shell`` (docs/shell.md).

Claude Code reads it from ``hooks.PreToolUse`` in its settings: an entry of ours among the
user's. Codex reads it from ``[[hooks.PreToolUse]]`` in ``config.toml`` and runs a user's hook
only once it is trusted: ``[hooks.state."<file>:pre_tool_use:<group>:<handler>"]`` holds the
``trusted_hash`` of the hook as Codex normalises it (event, matcher, and the handler with its
timeout and ``async`` flag), a SHA-256 of that identity as compact JSON with sorted keys. The
user asked for the hook by installing it, so the install records that trust; Codex treats
the hook as new, and asks again, as soon as anything in it changes.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

from skillstate.integrations.model import JSON

TIMEOUT_S = 30
"""Each hook call only judges one command (well under a second); the host waits this long."""

CLAUDE_MATCHER = "Bash"
CODEX_MATCHER = "^Bash$"
"""Codex names its shell tool ``Bash`` in the event, whatever the model called it."""


def command(program: str, host: str) -> str:
    """The hook's command line: ``program`` answers the event and is what the rewritten
    command runs, so the host's PATH need not find it."""
    quoted = shlex.quote(program)
    return f"{quoted} hook {host} --program {quoted}"


def claude_entry(program: str) -> dict[str, JSON]:
    """Our entry in Claude Code's ``hooks.PreToolUse`` list."""
    handler: dict[str, JSON] = {
        "type": "command",
        "command": command(program, "claude"),
        "timeout": TIMEOUT_S,
    }
    return {"matcher": CLAUDE_MATCHER, "hooks": [handler]}


def codex_tables(config: Path, program: str) -> str:
    """Our hook group in Codex's ``config.toml``, the first of the file (the install refuses a
    file with groups of its own), and the trust of it."""
    line = command(program, "codex")
    key = f"{config}:pre_tool_use:0:0"
    return "\n".join(
        [
            "[[hooks.PreToolUse]]",
            f"matcher = {_string(CODEX_MATCHER)}",
            "",
            "[[hooks.PreToolUse.hooks]]",
            'type = "command"',
            f"command = {_string(line)}",
            f"timeout = {TIMEOUT_S}",
            "",
            f"[hooks.state.{_string(key)}]",
            f"trusted_hash = {_string(codex_trust_hash(CODEX_MATCHER, line, TIMEOUT_S))}",
        ]
    )


def codex_trust_hash(matcher: str, line: str, timeout_s: int) -> str:
    """The hash Codex trusts a command hook by: its normalised identity, hashed."""
    handler = {"type": "command", "command": line, "timeout": timeout_s, "async": False}
    identity = {"event_name": "pre_tool_use", "matcher": matcher, "hooks": [handler]}
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's for these characters."""
    return json.dumps(text, ensure_ascii=False)
