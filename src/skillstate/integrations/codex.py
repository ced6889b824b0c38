"""Codex CLI: a ``skillstate`` model provider and the MCP server in its ``config.toml``.

Codex reads ``$CODEX_HOME/config.toml`` (``~/.codex`` when ``CODEX_HOME`` is unset) and, in a
trusted project, ``.codex/config.toml``, which wins over it. It picks its provider by the
top-level ``model_provider`` key, and a top-level key must come before the first table or it
lands inside that table: so one small block opens the file and the tables close it.

The provider names no key, only the variable Codex reads it from (``OPENAI_API_KEY``), which
the gateway forwards upstream as it came. With the shell hook, the tables also hold the hook
and its trust (``shellhook``), which Codex reads from the user's file only, and skillstate's
data directory as a writable root of Codex's workspace-write sandbox, so that ``skillstate
shell`` can archive the exact output there (in the read-only sandbox it cannot, and then shows
the output whole).
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

KEY_VARIABLE = "OPENAI_API_KEY"


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
    tables = "\n".join(
        [
            f"[model_providers.{SERVER_NAME}]",
            f"name = {_string('skillstate gateway')}",
            f"base_url = {_string(gateway + '/v1')}",
            f"env_key = {_string(KEY_VARIABLE)}",
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
    notes: tuple[str, ...] = (
        f"Codex sends the key in ${KEY_VARIABLE}; the gateway forwards it upstream.",
    )
    if where.project is not None:
        notes += ("Codex reads a project's .codex/config.toml only in a trusted project.",)
    if shell:
        notes += ("The shell hook is trusted in config.toml; Codex asks again if it changes.",)
    return Integration(Host.CODEX, pieces(where, gateway, command, shell, data_dir), notes)


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's for these characters."""
    return json.dumps(text, ensure_ascii=False)
