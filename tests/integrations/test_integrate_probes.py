"""What ``skillstate doctor`` is told of each host: not installed, installed as this version
writes it, or installed and drifted (with what ``--verify`` says)."""

from __future__ import annotations

from pathlib import Path

import pytest
from integrate_support import GATEWAY, edit_ours, record

from skillstate.integrations import Host, install, integration
from skillstate.integrations.model import Locations
from skillstate.integrations.probes import INSTALLED, NOT_INSTALLED, doctor_probes


def environ(tmp: Path) -> dict[str, str]:
    return {"HOME": str(tmp / "home"), "PATH": str(tmp / "no-bin")}  # skillstate: by name


@pytest.mark.parametrize("host", list(Host))
def test_each_host_is_not_installed_then_installed_then_drifted(host: Host, tmp_path: Path) -> None:
    env = environ(tmp_path)
    data = record(tmp_path).parent
    probe = doctor_probes(GATEWAY, data, env)[host.value]
    assert probe() == (NOT_INSTALLED, None)
    models = ("gpt-5",) if host is Host.OPENCODE else ()
    plan = integration(host, Locations(env, tmp_path / "home"), GATEWAY, "skillstate", models)
    install(plan, record(tmp_path))
    # Codex's state also says which login it uses (none here: $OPENAI_API_KEY).
    installed = INSTALLED + (
        "; Codex logs in with an API key ($OPENAI_API_KEY)" * (host is Host.CODEX)
    )
    assert probe() == (installed, None)  # the models installed with are read back
    other = doctor_probes("http://127.0.0.1:9999", data, env)[host.value]
    state, drift = other()
    assert state == installed and drift is not None  # another gateway than the one installed
    edit_ours(plan.edits[0].path)
    state, drift = probe()
    assert state == installed and drift is not None and str(plan.edits[0].path) in drift


def test_the_record_makes_the_data_dir_its_owners_only(tmp_path: Path) -> None:
    env = environ(tmp_path)
    plan = integration(Host.CLAUDE, Locations(env, tmp_path / "home"), GATEWAY, "skillstate")
    install(plan, record(tmp_path))
    assert record(tmp_path).parent.stat().st_mode & 0o777 == 0o700
    assert record(tmp_path).stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "home" / ".claude").stat().st_mode & 0o777 == 0o755  # the host's own
