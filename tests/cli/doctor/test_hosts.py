"""The integration and shell-hook checks, through the probes their features provide."""

from __future__ import annotations

from skillstate.cli.doctor import hosts
from skillstate.cli.doctor.hosts import check_integrations, check_shell_hook


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
    assert check_shell_hook(lambda: (True, "installed for claude")).ok is True
    assert check_shell_hook(lambda: (False, "not installed")).ok is None

    def broken() -> tuple[bool, str]:
        raise OSError("settings.json unreadable")

    failed = check_shell_hook(broken)
    assert failed.ok is False and "cannot verify: settings.json unreadable" in failed.detail
