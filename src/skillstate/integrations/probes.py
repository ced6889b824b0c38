"""What ``skillstate doctor`` and ``--verify`` ask of the integrations: for each host, whether
skillstate is installed in its user-scope files and, when it is, where they differ from what
this version would write (for Codex, also which login it uses: ``installed; ...``); and in
which hosts the shell hook is. Read only."""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

from skillstate.config.sources import home_directory
from skillstate.integrations import claude, codex, integration, shellhook
from skillstate.integrations.installer import verify
from skillstate.integrations.manifest import FILE_NAME, key, load
from skillstate.integrations.model import SERVER_NAME, Host, Integration, Locations

INSTALLED = "installed"
NOT_INSTALLED = "not installed"

Probe = Callable[[], tuple[str, "str | None"]]
ShellProbe = Callable[[], tuple[bool, str]]
HOOKED = (Host.CLAUDE, Host.CODEX)
"""The hosts with a PreToolUse hook for the shell lane."""


def doctor_probes(gateway: str, data_dir: Path, environ: Mapping[str, str]) -> dict[str, Probe]:
    """One probe per host, for a gateway at ``gateway`` and the install record in
    ``data_dir``: ``(state, drift or None)`` when called."""
    env = dict(environ)
    command = shutil.which("skillstate", path=env.get("PATH")) or "skillstate"
    where = Locations(env, home_directory(env), None)
    probes = {host: partial(_probe, host, where, gateway, command, data_dir) for host in Host}
    return {host.value: probe for host, probe in probes.items()}


def shell_probe(environ: Mapping[str, str]) -> ShellProbe:
    """The shell hook's probe: ``(installed, detail)``, installed when any host has it."""
    env = dict(environ)
    command = shutil.which("skillstate", path=env.get("PATH")) or "skillstate"
    where = Locations(env, home_directory(env), None)
    return partial(_shell, where, command)


def hook_installed(host: Host, where: Locations, command: str) -> bool:
    """Whether ``host``'s files in ``where`` hold the shell hook that runs ``command``."""
    if host is Host.CODEX:
        path = codex.config_path(where)
    elif host is Host.CLAUDE:
        path = claude.settings_path(where)
    else:
        return False
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError):
        return False
    return shellhook.command(command, host.value) in _hook_commands(data)


def _hook_commands(data: object) -> list[str]:
    """The command of each PreToolUse hook in a parsed settings or config file."""
    groups = data.get("hooks", {}).get("PreToolUse") if isinstance(data, dict) else None
    found: list[str] = []
    for group in groups if isinstance(groups, list) else []:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for handler in handlers if isinstance(handlers, list) else []:
            if isinstance(handler, dict) and isinstance(handler.get("command"), str):
                found.append(handler["command"])
    return found


def _shell(where: Locations, command: str) -> tuple[bool, str]:
    hooked = [host.value for host in HOOKED if hook_installed(host, where, command)]
    if hooked:
        return True, f"installed for {', '.join(hooked)}; {grants()}"
    fix = " or ".join(f"skillstate integrate {host.value} --install --shell" for host in HOOKED)
    return False, f"not installed (to use it: {fix})"


def grants() -> str:
    """Which decision the hook gives, for which programs (docs/shell.md, "Threat model")."""
    from skillstate.integrations.shell.programs import uses

    return (
        f"allow (no prompt, read-only by construction): {', '.join(uses(runs_code=False))}; "
        f"the user decides (runs code; Claude Code asks, Codex runs it untouched): "
        f"{', '.join(uses(runs_code=True))}; anything else untouched"
    )


def _plan(host: Host, where: Locations, gateway: str, command: str, data_dir: Path) -> Integration:
    shell = hook_installed(host, where, command)
    plan = integration(host, where, gateway, command, shell=shell, data_dir=data_dir)
    if host is Host.OPENCODE:  # the models it was installed with are part of it
        plan = integration(host, where, gateway, command, _listed_models(plan))
    return plan


def _listed_models(plan: Integration) -> tuple[str, ...]:
    """The models OpenCode's ``skillstate`` provider lists now (none when it has none)."""
    for edit in plan.edits:
        try:
            data = json.loads(edit.path.read_text(encoding="utf-8"))
            models = data["provider"][SERVER_NAME]["models"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(models, dict):
            return tuple(str(name) for name in models)
    return ()


def _probe(
    host: Host, where: Locations, gateway: str, command: str, data_dir: Path
) -> tuple[str, str | None]:
    """Not installed when the record names none of the host's files; else installed, with
    what ``--verify`` reports, if anything."""
    plan = _plan(host, where, gateway, command, data_dir)
    entries = load(data_dir / FILE_NAME).entries
    if not any(key(edit.path) in entries for edit in plan.edits):
        return NOT_INSTALLED, None
    problems = verify(plan)
    state = INSTALLED
    if host is Host.CODEX:  # which login Codex uses decides where its requests go
        state += f"; {codex.login_text(where)}"
    return state, "; ".join(problems) or None
