"""The checks of what ``skillstate integrate`` and the shell hook installed: each host's state
and its drift (what differs from what ``integrate`` would write now).

The verifying itself belongs to those features; this module only asks:

* ``skillstate.integrations.probes.doctor_probes`` gives ``{host: IntegrationProbe}``; a
  probe reads, never writes, and returns ``(state, drift)``: ``state`` is ``"installed"`` or
  ``"not installed"``, ``drift`` says what differs, or ``None``.
* ``skillstate.shell.doctor_probe()``, found by name (a build without it says so as
  information), returns ``(installed, detail)``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol, cast

from skillstate.cli.client import gateway_url
from skillstate.config import Settings
from skillstate.doctor.check import Check

SHELL_MODULE = "skillstate.shell"
NOT_IN_BUILD = "not available in this build"
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


def shell_hook_probe() -> ShellHookProbe | None:
    """The shell hook's probe, or ``None`` when this build has no shell hook."""
    probe = _hook(SHELL_MODULE, "doctor_probe")
    return None if probe is None else cast(ShellHookProbe, probe)


def _hook(module_name: str, attribute: str) -> Callable[..., object] | None:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    found = getattr(module, attribute, None)
    return found if callable(found) else None


def check_integrations(probes: Mapping[str, IntegrationProbe] | None) -> list[Check]:
    """One check per host: installed and as ``integrate`` would write it (ok), drifted (a
    problem, fixed by installing again), or not installed (information)."""
    if probes is None:
        return [Check("integrations", None, NOT_IN_BUILD)]
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
    return Check(name, state == INSTALLED or None, state)


def check_shell_hook(probe: ShellHookProbe | None) -> Check:
    """Whether the shell hook is installed; absent by choice is information."""
    if probe is None:
        return Check("shell hook", None, NOT_IN_BUILD)
    try:
        installed, detail = probe()
    except Exception as exc:
        return Check("shell hook", False, f"cannot verify: {exc}")
    return Check("shell hook", True if installed else None, detail)
