"""Codex CLI: a ``skillstate`` model provider and the MCP server in its ``config.toml``.

Codex reads ``$CODEX_HOME/config.toml`` (``~/.codex`` when ``CODEX_HOME`` is unset) and, in a
trusted project, ``.codex/config.toml``, which wins over it. It picks its provider by the
top-level ``model_provider`` key, and a top-level key must come before the first table or it
lands inside that table: so one small block opens the file and the tables close it.

The provider names no key. Codex logged in with an API key (or none) gets a provider that names
the variable Codex reads the key from (``OPENAI_API_KEY``), which the gateway forwards upstream
as it came. Codex logged in with ChatGPT (``$CODEX_HOME/auth.json`` holds the login's tokens)
gets ``requires_openai_auth = true`` and no ``env_key``: Codex then sends its own login (the
access token and ``ChatGPT-Account-ID``) to the gateway, which routes it to the ChatGPT backend.
The top-level ``openai_base_url``, the other way to keep the login, makes Codex 0.171 open a
WebSocket and send zstd-compressed bodies (checked against the real CLI): not taken.

The provider also says ``supports_websockets = true``: Codex then sends its requests as frames
on one WebSocket (``GET /v1/responses`` upgraded), which the gateway serves through the same
request path as a ``POST`` (``server.socket_route``; the real CLI runs the long hybrid loop that
way with an API key, tests/e2e/test_codex_socket.py, and with a ChatGPT login against the
ChatGPT backend's fake, tests/e2e/test_codex_chatgpt.py). Without it Codex never tries the
upgrade.

With the shell hook, the tables also hold the hook and its trust (``shellhook``), which Codex
reads from the user's file only, and skillstate's data directory as a writable root of Codex's
workspace-write sandbox, so that ``skillstate shell`` can archive the exact output there (in
the read-only sandbox it cannot, and then shows the output whole).
"""

from __future__ import annotations

import json
from pathlib import Path

from skillstate.integrations import shellhook
from skillstate.integrations.model import (
    SERVER_NAME,
    Block,
    BlockEdit,
    Edit,
    Host,
    Integration,
    IntegrationError,
    Locations,
    Syntax,
)
from skillstate.protocols.logins import Login

KEY_VARIABLE = "OPENAI_API_KEY"
AUTH_FILE = "auth.json"


def auth_path(where: Locations) -> Path:
    """Codex's login file: ``$CODEX_HOME/auth.json`` (``~/.codex/auth.json``), whatever the
    scope (a project's ``.codex`` holds no login)."""
    home = where.env.get("CODEX_HOME")
    return (Path(home) if home else where.home / ".codex") / AUTH_FILE


def codex_login(where: Locations) -> Login:
    """Which login Codex holds: ``CHATGPT`` when ``auth.json`` holds a ChatGPT login's tokens,
    ``API_KEY`` when it holds a key, else ``NONE`` (Codex then reads ``$OPENAI_API_KEY``).
    Reads the file's shape only; no token is kept or shown."""
    try:
        data = json.loads(auth_path(where).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Login.NONE
    if not isinstance(data, dict):
        return Login.NONE
    tokens = data.get("tokens")
    if isinstance(tokens, dict) and tokens.get("access_token"):
        return Login.CHATGPT
    return Login.API_KEY if data.get("OPENAI_API_KEY") else Login.NONE


def config_path(where: Locations) -> Path:
    """The ``config.toml`` of the scope asked for."""
    if where.project is not None:
        return where.project / ".codex" / "config.toml"
    home = where.env.get("CODEX_HOME")
    return Path(home) / "config.toml" if home else where.home / ".codex" / "config.toml"


def config_edit(
    where: Locations, gateway: str, command: str, shell: bool = False, data_dir: Path | None = None
) -> BlockEdit:
    """The provider selection at the top, the provider and MCP server tables (and the shell
    hook's) at the end."""
    top = Block(f"model_provider = {_string(SERVER_NAME)}", at_top=True)
    # A ChatGPT login is Codex's own (auth.json): the provider asks Codex to send it.
    if codex_login(where) is Login.CHATGPT:
        credential = "requires_openai_auth = true"
    else:
        credential = f"env_key = {_string(KEY_VARIABLE)}"
    tables = "\n".join(
        [
            f"[model_providers.{SERVER_NAME}]",
            f"name = {_string('skillstate gateway')}",
            f"base_url = {_string(gateway + '/v1')}",
            credential,
            "supports_websockets = true",
            'wire_api = "responses"',
            "",
            f"[mcp_servers.{SERVER_NAME}]",
            f"command = {_string(command)}",
            'args = ["mcp"]',
        ]
    )
    path = config_path(where)
    if shell:
        tables += "\n\n" + shellhook.codex_tables(path.absolute(), command)
    if shell and data_dir is not None:
        roots = f"writable_roots = [{_string(str(data_dir.absolute()))}]"
        tables += "\n\n" + "\n".join(["[sandbox_workspace_write]", roots])
    return BlockEdit(path, (top, Block(tables)), Syntax.TOML)


def pieces(
    where: Locations, gateway: str, command: str, shell: bool = False, data_dir: Path | None = None
) -> tuple[Edit, ...]:
    """Every managed piece Codex gets."""
    return (config_edit(where, gateway, command, shell, data_dir),)


def integration(
    where: Locations, gateway: str, command: str, shell: bool = False, data_dir: Path | None = None
) -> Integration:
    """Codex's integration, with where its key comes from; ``data_dir`` is where the shell
    lane archives."""
    if shell and where.project is not None:
        raise IntegrationError(
            "Codex runs a hook only once it is trusted, and keeps that trust in the user's "
            "config alone: install the shell hook without --project"
        )
    notes: tuple[str, ...] = (login_note(where), TRANSPORT_NOTE)
    if where.project is not None:
        notes += ("Codex reads a project's .codex/config.toml only in a trusted project.",)
    if shell:
        notes += ("The shell hook is trusted in config.toml; Codex asks again if it changes.",)
    return Integration(Host.CODEX, pieces(where, gateway, command, shell, data_dir), notes)


def login_note(where: Locations) -> str:
    """What the user is told of Codex's login and what the gateway does with it."""
    login = codex_login(where)
    if login is Login.CHATGPT:
        return (
            f"Codex is logged in with ChatGPT ({auth_path(where)}): the provider keeps that "
            "login (requires_openai_auth), and the gateway sends its requests to the ChatGPT "
            "backend (chatgpt_base_url)."
        )
    held = "an API key in auth.json" if login is Login.API_KEY else f"${KEY_VARIABLE}"
    return (
        f"Codex logs in with an API key ({held}): it sends the key in ${KEY_VARIABLE}, and the "
        "gateway forwards it upstream."
    )


TRANSPORT_NOTE = (
    "Codex sends its requests over a WebSocket (supports_websockets = true: one "
    "GET /v1/responses upgraded per session), served as the HTTP route serves them."
)
"""Which transport the provider sets, in the user's words (the same with either login)."""


def login_text(where: Locations) -> str:
    """Which login Codex uses and where the gateway sends it, in a few words (``doctor``)."""
    login = codex_login(where)
    if login is Login.CHATGPT:
        return "Codex logs in with ChatGPT: its requests go to the ChatGPT backend"
    if login is Login.API_KEY:
        return "Codex logs in with an API key (auth.json)"
    return f"Codex logs in with an API key (${KEY_VARIABLE})"


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's for these characters."""
    return json.dumps(text, ensure_ascii=False)
