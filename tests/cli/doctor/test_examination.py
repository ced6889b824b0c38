"""examine: every check in order, with the probes given instead of the build's."""

from __future__ import annotations

import datetime
import socket
from pathlib import Path

from skillstate.cli.doctor import Surroundings, examine, healthy
from skillstate.config import load_settings
from skillstate.economics.prices import builtin_catalog


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_every_check_in_order_with_given_probes(tmp_path: Path) -> None:
    port = closed_port()
    cli = {"port": port, "upstream": f"http://127.0.0.1:{port}", "data_dir": str(tmp_path / "d")}
    settings = load_settings(cli=cli, environ={"HOME": str(tmp_path)})
    around = Surroundings(
        environ={"PATH": "", "HOME": str(tmp_path)},
        integrations={"codex": lambda: ("installed", "wire_api is chat")},
        shell_hook=lambda: (True, "~/.bashrc"),
        clis=("codex",),
        today=lambda: builtin_catalog().as_of + datetime.timedelta(days=30),
    )
    checks = await examine(settings, around)
    assert [check.name for check in checks] == [
        "gateway",
        "circuits",
        "upstream default",
        "data dir",
        "store",
        "redis",
        "cli codex",
        "integration codex",
        "login claude",
        "shell hook",
        "price catalog",
    ]
    assert [check.ok for check in checks] == [
        False,
        None,
        False,
        None,
        None,
        None,
        None,
        False,
        None,
        True,
        True,
    ]
    assert not healthy(checks)
