"""Claude Code: ``ANTHROPIC_BASE_URL`` in its settings' ``env`` and the MCP server.

User scope: the settings are ``$CLAUDE_CONFIG_DIR/settings.json`` (``~/.claude/settings.json``
when unset) and user MCP servers live in ``mcpServers`` of ``$CLAUDE_CONFIG_DIR/.claude.json``
(``~/.claude.json``). Project scope: ``.claude/settings.json`` and ``.mcp.json`` in the
project; a project's ``.claude/settings.local.json`` still wins over what is written here.

With the shell hook, the settings also get an entry of ours in ``hooks.PreToolUse``, beside
the user's own hooks (``shellhook``).

No key is written: Claude Code keeps its own key or login, and the gateway forwards it.
"""

from __future__ import annotations

from pathlib import Path

from skillstate.integrations import shellhook
from skillstate.integrations.model import (
    JSON,
    SERVER_NAME,
    Edit,
    Host,
    Integration,
    KeysEdit,
    Locations,
)


def settings_path(where: Locations) -> Path:
    """The settings file of the scope asked for."""
    if where.project is not None:
        return where.project / ".claude" / "settings.json"
    return _config_dir(where) / "settings.json"


def servers_path(where: Locations) -> Path:
    """The file holding the scope's MCP servers."""
    if where.project is not None:
        return where.project / ".mcp.json"
    configured = where.env.get("CLAUDE_CONFIG_DIR")
    return Path(configured) / ".claude.json" if configured else where.home / ".claude.json"


def server(command: str) -> dict[str, JSON]:
    """The MCP server entry: a stdio command Claude Code spawns."""
    return {"type": "stdio", "command": command, "args": ["mcp"], "env": {}}


def pieces(where: Locations, gateway: str, command: str, shell: bool = False) -> tuple[Edit, ...]:
    """Every managed piece Claude Code gets."""
    hooks = ((("hooks", "PreToolUse"), shellhook.claude_entry(command)),) if shell else ()
    keys = ((("env", "ANTHROPIC_BASE_URL"), gateway),)
    settings = KeysEdit(settings_path(where), keys, hooks)
    servers = KeysEdit(servers_path(where), ((("mcpServers", SERVER_NAME), server(command)),))
    return (settings, servers)


def integration(where: Locations, gateway: str, command: str, shell: bool = False) -> Integration:
    """Claude Code's integration, with what can still override it."""
    notes: tuple[str, ...] = (
        "Claude Code keeps its own key or login; the gateway forwards it upstream.",
    )
    if where.env.get("ANTHROPIC_BASE_URL", gateway) != gateway:
        notes += ("ANTHROPIC_BASE_URL is also set in this shell, to another URL.",)
    return Integration(Host.CLAUDE, pieces(where, gateway, command, shell), notes)


def _config_dir(where: Locations) -> Path:
    configured = where.env.get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else where.home / ".claude"
