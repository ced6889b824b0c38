"""What ``skillstate doctor`` asks of the integrations: for each host, whether skillstate is
installed in its user-scope files and, when it is, where they differ from what this version
would write. Read only."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

from skillstate.config.sources import home_directory
from skillstate.integrations import integration
from skillstate.integrations.installer import verify
from skillstate.integrations.manifest import FILE_NAME, key, load
from skillstate.integrations.model import SERVER_NAME, Host, Integration, Locations

INSTALLED = "installed"
NOT_INSTALLED = "not installed"

Probe = Callable[[], tuple[str, "str | None"]]


def doctor_probes(gateway: str, data_dir: Path, environ: Mapping[str, str]) -> dict[str, Probe]:
    """One probe per host, for a gateway at ``gateway`` and the install record in
    ``data_dir``: ``(state, drift or None)`` when called."""
    env = dict(environ)
    command = shutil.which("skillstate", path=env.get("PATH")) or "skillstate"
    where = Locations(env, home_directory(env), None)
    record = data_dir / FILE_NAME
    return {host.value: partial(_probe, host, where, gateway, command, record) for host in Host}


def _plan(host: Host, where: Locations, gateway: str, command: str) -> Integration:
    plan = integration(host, where, gateway, command)
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
    host: Host, where: Locations, gateway: str, command: str, record: Path
) -> tuple[str, str | None]:
    """Not installed when the record names none of the host's files; else installed, with
    what ``--verify`` reports, if anything."""
    plan = _plan(host, where, gateway, command)
    entries = load(record).entries
    if not any(key(edit.path) in entries for edit in plan.edits):
        return NOT_INSTALLED, None
    problems = verify(plan)
    return INSTALLED, "; ".join(problems) or None
