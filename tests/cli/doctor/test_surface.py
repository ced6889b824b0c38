"""The doctor package's public surface, pinned."""

from __future__ import annotations

import skillstate.cli.doctor
from skillstate.cli.doctor import Check, healthy, report_json


def test_doctor_public_surface() -> None:
    assert sorted(skillstate.cli.doctor.__all__) == sorted(
        [
            "Check",
            "IntegrationProbe",
            "ShellHookProbe",
            "Surroundings",
            "examine",
            "healthy",
            "report_json",
        ]
    )
    assert all(hasattr(skillstate.cli.doctor, name) for name in skillstate.cli.doctor.__all__)


def test_only_a_failure_is_unhealthy() -> None:
    info = Check("cli codex", None, "not on PATH")
    fine = Check("gateway", True, "up")
    assert healthy([info, fine])
    broken = Check("data dir", False, "mode 755", "chmod 700 /d")
    assert not healthy([info, fine, broken])
    assert report_json([broken]) == {
        "ok": False,
        "checks": [{"name": "data dir", "ok": False, "detail": "mode 755", "fix": "chmod 700 /d"}],
    }
    assert [check.status for check in (fine, broken, info)] == ["ok", "FAIL", "info"]
