"""Pointing an agent host at the gateway: Codex, OpenCode and Claude Code (docs/integrations.md).

Each host module says, as pure functions of an environment mapping and a home directory, where
the host's files are and what skillstate puts in them; ``installer`` applies that as one
transaction and records it so that it can be taken out again.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Imported before ``fragment`` below is defined: importing the submodule of that name later
# (cli/integrate.py does) would otherwise rebind the package's ``fragment`` to the module.
from skillstate.integrations.fragment import fragment_edit
from skillstate.integrations.model import (
    DEFAULT_GATEWAY,
    Host,
    Integration,
    IntegrationError,
    Locations,
)

if TYPE_CHECKING:
    from skillstate.integrations.installer import install, snippet, uninstall, verify
    from skillstate.integrations.manifest import FILE_NAME as RECORD_NAME

_LAZY = {
    "install": ("skillstate.integrations.installer", "install"),
    "snippet": ("skillstate.integrations.installer", "snippet"),
    "uninstall": ("skillstate.integrations.installer", "uninstall"),
    "verify": ("skillstate.integrations.installer", "verify"),
    "RECORD_NAME": ("skillstate.integrations.manifest", "FILE_NAME"),
}
"""Names imported on first use: ``skillstate hook``, which a host runs before every shell call,
imports ``integrations.shell`` and must not pay for the installer and every host's module."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_GATEWAY",
    "RECORD_NAME",
    "Host",
    "Integration",
    "IntegrationError",
    "Locations",
    "fragment",
    "install",
    "integration",
    "snippet",
    "uninstall",
    "verify",
]


def integration(
    host: Host,
    where: Locations,
    gateway: str,
    command: str,
    models: tuple[str, ...] = (),
    shell: bool = False,
    data_dir: Path | None = None,
) -> Integration:
    """What ``host`` gets, for a gateway at ``gateway`` and ``command`` as the MCP server (and
    the shell hook's program, with ``shell``; ``data_dir`` is where the shell lane archives)."""
    from skillstate.integrations import claude, codex, opencode

    gateway = gateway.rstrip("/")
    if host is Host.CODEX:
        return codex.integration(where, gateway, command, shell, data_dir)
    if shell and host is Host.OPENCODE:
        raise IntegrationError("OpenCode has no PreToolUse hook: --shell is for codex and claude")
    if host is Host.OPENCODE:
        return opencode.integration(where, gateway, command, models)
    return claude.integration(where, gateway, command, shell)


def fragment(host: Host, project: Path) -> Integration:
    """The instruction fragment in the project's AGENTS.md or CLAUDE.md."""
    return Integration(host, (fragment_edit(host, project),))
