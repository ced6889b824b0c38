"""OpenCode: a ``skillstate`` provider and the MCP server in ``opencode.json``.

OpenCode merges its configs, later ones winning per key: the global
``$XDG_CONFIG_HOME/opencode/opencode.json`` (``~/.config/opencode`` when unset), then the file
``OPENCODE_CONFIG`` names, then the project's ``opencode.json``. User scope writes the file
``OPENCODE_CONFIG`` names when it is set (it would win over the global one), else the global
one; project scope writes the project's.

The provider is OpenAI-compatible and names no key: OpenCode asks for one with
``opencode auth login`` (provider ``skillstate``), and the gateway forwards it upstream.
"""

from __future__ import annotations

from pathlib import Path

from skillstate.integrations.model import (
    JSON,
    SERVER_NAME,
    Edit,
    Host,
    Integration,
    KeysEdit,
    Locations,
)


def config_path(where: Locations) -> Path:
    """The ``opencode.json`` of the scope asked for."""
    if where.project is not None:
        return where.project / "opencode.json"
    custom = where.env.get("OPENCODE_CONFIG")
    if custom:
        return Path(custom)
    xdg = where.env.get("XDG_CONFIG_HOME", "")
    # The XDG Base Directory spec: a relative XDG_CONFIG_HOME is invalid and is ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else where.home / ".config"
    return base / "opencode" / "opencode.json"


def provider(gateway: str, models: tuple[str, ...]) -> dict[str, JSON]:
    """The provider entry: the gateway's OpenAI-compatible base URL and the models named."""
    listed: dict[str, JSON] = {model: {"name": model} for model in models}
    return {
        "npm": "@ai-sdk/openai-compatible",
        "name": "skillstate gateway",
        "options": {"baseURL": gateway + "/v1"},
        "models": listed,
    }


def server(command: str) -> dict[str, JSON]:
    """The MCP server entry: a local command OpenCode spawns."""
    return {"type": "local", "command": [command, "mcp"], "enabled": True}


def pieces(
    where: Locations, gateway: str, command: str, models: tuple[str, ...] = ()
) -> tuple[Edit, ...]:
    """Every managed piece OpenCode gets."""
    keys: tuple[tuple[tuple[str, ...], JSON], ...] = (
        (("provider", SERVER_NAME), provider(gateway, models)),
        (("mcp", SERVER_NAME), server(command)),
    )
    return (KeysEdit(config_path(where), keys),)


def integration(
    where: Locations, gateway: str, command: str, models: tuple[str, ...] = ()
) -> Integration:
    """OpenCode's integration, with where its key comes from."""
    notes = ["Give OpenCode the upstream key with `opencode auth login` (provider skillstate)."]
    if not models:
        notes.append("No --model given: the provider lists no models; name them with --model.")
    else:
        notes.append(f"Choose it with `opencode -m {SERVER_NAME}/{models[0]}`.")
    return Integration(Host.OPENCODE, pieces(where, gateway, command, models), tuple(notes))
