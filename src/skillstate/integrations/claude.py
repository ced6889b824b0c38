"""Claude Code: ``ANTHROPIC_BASE_URL`` in its settings' ``env`` and the MCP server.

User scope: the settings are ``$CLAUDE_CONFIG_DIR/settings.json`` (``~/.claude/settings.json``
when unset) and user MCP servers live in ``mcpServers`` of ``$CLAUDE_CONFIG_DIR/.claude.json``
(``~/.claude.json``). Project scope: ``.claude/settings.json`` and ``.mcp.json`` in the
project; a project's ``.claude/settings.local.json`` still wins over what is written here.

With the shell hook, the settings also get an entry of ours in ``hooks.PreToolUse``, beside
the user's own hooks (``shellhook``).

No key is written: Claude Code keeps its own key or login, and the gateway forwards it.
``login`` tells which one Claude Code will use (for ``doctor`` and the install's notes); a
subscription login passes through the gateway untouched by default (docs/integrations.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
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
from skillstate.protocols.headers import ANTHROPIC_OAUTH_PREFIX
from skillstate.protocols.logins import Login

SUBSCRIPTION_NOTE = (
    "A Pro/Max login passes through the gateway untouched (no savings; Anthropic allows that "
    "login for Claude Code only). For the savings: an API key (ANTHROPIC_API_KEY), or the "
    "gateway's (SKILLSTATE_API_KEY) with any placeholder ANTHROPIC_API_KEY here. Through any "
    "base URL but Anthropic's, Claude Code asks a subscription for a 200k context: choose "
    "`/model sonnet[1m]` where your plan has the 1M window."
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
    found = login(where)
    notes: tuple[str, ...] = (
        "Claude Code keeps its own key or login; the gateway forwards it upstream.",
        f"Claude Code's login: {found.describe()}.",
    )
    if found.kind is Login.ANTHROPIC_SUBSCRIPTION:
        notes += (SUBSCRIPTION_NOTE,)
    if where.env.get("ANTHROPIC_BASE_URL", gateway) != gateway:
        notes += ("ANTHROPIC_BASE_URL is also set in this shell, to another URL.",)
    return Integration(Host.CLAUDE, pieces(where, gateway, command, shell), notes)


@dataclass(frozen=True, slots=True)
class ClaudeLogin:
    """The credential Claude Code will send: its kind and where it comes from."""

    kind: Login
    source: str

    def describe(self) -> str:
        if self.kind is Login.NONE:
            return f"none found ({self.source})"
        return f"{self.kind.value} from {self.source}"


def login(where: Locations) -> ClaudeLogin:
    """Which credential Claude Code sends, in its own order of precedence (measured with the
    real CLI for the two variables): ``ANTHROPIC_AUTH_TOKEN`` (a bearer token: a subscription
    when it is an OAuth token), ``ANTHROPIC_API_KEY``, an ``apiKeyHelper`` in the user's
    settings, ``CLAUDE_CODE_OAUTH_TOKEN``, then the login ``claude /login`` keeps in
    ``.credentials.json``. Variables count from the shell and from the settings' ``env``. Reads
    files, never prints a secret."""
    settings = _read_json(_config_dir(where) / "settings.json")
    env_section = settings.get("env")
    said = {
        **(env_section if isinstance(env_section, dict) else {}),
        **{k: v for k, v in where.env.items() if v},
    }
    token = said.get("ANTHROPIC_AUTH_TOKEN")
    if isinstance(token, str) and token:
        oauth = token.startswith(ANTHROPIC_OAUTH_PREFIX)
        kind = Login.ANTHROPIC_SUBSCRIPTION if oauth else Login.API_KEY
        return ClaudeLogin(kind, "ANTHROPIC_AUTH_TOKEN")
    if said.get("ANTHROPIC_API_KEY"):
        return ClaudeLogin(Login.API_KEY, "ANTHROPIC_API_KEY")
    if settings.get("apiKeyHelper"):
        return ClaudeLogin(Login.API_KEY, "apiKeyHelper in settings.json")
    if said.get("CLAUDE_CODE_OAUTH_TOKEN"):
        return ClaudeLogin(Login.ANTHROPIC_SUBSCRIPTION, "CLAUDE_CODE_OAUTH_TOKEN")
    credentials = _config_dir(where) / ".credentials.json"
    if "claudeAiOauth" in _read_json(credentials):
        return ClaudeLogin(Login.ANTHROPIC_SUBSCRIPTION, f"its login in {credentials}")
    where_not = f"not in the environment, the settings or {credentials}"
    return ClaudeLogin(Login.NONE, f"{where_not}; on macOS a login is kept in the Keychain")


def _read_json(path: Path) -> dict[str, object]:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _config_dir(where: Locations) -> Path:
    configured = where.env.get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else where.home / ".claude"
