"""The integration and shell-hook checks, through the probes their features provide."""

from __future__ import annotations

import sys
import types

import pytest

from skillstate.doctor import hosts
from skillstate.doctor.hosts import check_integrations, check_shell_hook


def test_without_the_features_this_build_says_so() -> None:
    assert check_integrations(None)[0].detail == "not available in this build"
    assert check_integrations(None)[0].ok is None
    assert check_shell_hook(None).ok is None


def test_each_host_state_and_drift() -> None:
    def broken() -> tuple[str, str | None]:
        raise OSError("config.toml unreadable")

    probes: dict[str, hosts.IntegrationProbe] = {
        "codex": lambda: ("installed", None),
        "opencode": lambda: ("installed", "baseURL is http://127.0.0.1:9999/v1"),
        "claude": lambda: ("not installed", None),
        "other": broken,
    }
    checks = {check.name: check for check in check_integrations(probes)}
    assert checks["integration codex"].ok is True
    drifted = checks["integration opencode"]
    assert drifted.ok is False and "drifted: baseURL is http://127.0.0.1:9999/v1" in drifted.detail
    assert drifted.fix == "skillstate integrate opencode --install"
    assert checks["integration claude"].ok is None
    assert "skillstate integrate claude --install" in checks["integration claude"].detail
    assert checks["integration other"].ok is False
    assert "cannot verify: config.toml unreadable" in checks["integration other"].detail


def test_the_shell_hook() -> None:
    assert check_shell_hook(lambda: (True, "~/.bashrc")).ok is True
    assert check_shell_hook(lambda: (False, "not installed")).ok is None


def test_the_shell_probe_is_found_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    shell = types.ModuleType(hosts.SHELL_MODULE)
    shell.doctor_probe = lambda: (True, "~/.zshrc")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, hosts.SHELL_MODULE, shell)
    probe = hosts.shell_hook_probe()
    assert probe is not None and probe() == (True, "~/.zshrc")
