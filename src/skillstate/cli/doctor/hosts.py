"""The checks of what ``skillstate integrate`` and the shell hook installed: each host's state
and its drift (what differs from what ``integrate`` would write now).

The verifying itself belongs to ``skillstate.integrations.probes``; this module only asks.
``doctor_probes`` gives ``{host: IntegrationProbe}``; a probe reads, never writes, and returns
``(state, drift)``: ``state`` is ``"installed"`` or ``"not installed"``, ``drift`` says what
differs, or ``None``. ``shell_probe`` returns ``(installed, detail)``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from skillstate.cli.client import gateway_url
from skillstate.cli.doctor.check import Check
from skillstate.config import Settings

INSTALLED = "installed"
NOT_INSTALLED = "not installed"


class IntegrationProbe(Protocol):
    """A read-only look at one host's integration: ``(state, drift or None)``."""

    def __call__(self) -> tuple[str, str | None]: ...


ShellHookProbe = Callable[[], tuple[bool, str]]
"""A read-only look at the shell hook: ``(installed, detail)``."""


def integration_probes(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> Mapping[str, IntegrationProbe]:
    """Each host's probe (``integrations.probes``), for the gateway ``settings`` describe."""
    from skillstate.integrations.probes import doctor_probes

    env = os.environ if environ is None else environ
    return doctor_probes(gateway_url(settings), Path(settings.data_dir), env)


def shell_hook_probe(environ: Mapping[str, str] | None = None) -> ShellHookProbe:
    """The shell hook's probe (``integrations.probes``): in which hosts it is installed."""
    from skillstate.integrations.probes import shell_probe

    return shell_probe(os.environ if environ is None else environ)


def check_integrations(probes: Mapping[str, IntegrationProbe]) -> list[Check]:
    """One check per host: installed and as ``integrate`` would write it (ok), drifted (a
    problem, fixed by installing again), or not installed (information)."""
    return [_integration(host, probe) for host, probe in probes.items()]


def _integration(host: str, probe: IntegrationProbe) -> Check:
    name = f"integration {host}"
    install = f"skillstate integrate {host} --install"
    try:
        state, drift = probe()
    except Exception as exc:  # a probe that fails is a finding, not a crash of doctor
        return Check(name, False, f"cannot verify: {exc}", install)
    if drift is not None:
        return Check(name, False, f"{state}, drifted: {drift}", install)
    if state == NOT_INSTALLED:
        return Check(name, None, f"{state} (to use it: {install})")
    # Codex's says which login it uses after the word: "installed; Codex logs in with ...".
    return Check(name, state.split(";")[0] == INSTALLED or None, state)


def check_shell_hook(probe: ShellHookProbe) -> Check:
    """Whether the shell hook is installed; absent by choice is information."""
    try:
        installed, detail = probe()
    except Exception as exc:
        return Check("shell hook", False, f"cannot verify: {exc}")
    return Check("shell hook", True if installed else None, detail)
