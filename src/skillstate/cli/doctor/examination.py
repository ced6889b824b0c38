"""``examine``: every check ``skillstate doctor`` runs, in the order it prints them."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from skillstate.cli.doctor import catalog, hosts, logins, machine, network, shared
from skillstate.cli.doctor.check import Check
from skillstate.config import Settings


@dataclass(frozen=True, slots=True)
class Surroundings:
    """What the checks look at besides the settings: the ``PATH`` the CLIs are looked up on
    and the integrate and shell-hook probes (``None``: those of ``integrations.probes``), and the
    config file the settings came from, for the command that starts the gateway; ``today``
    tells the price catalog's age."""

    environ: Mapping[str, str] | None = None
    integrations: Mapping[str, hosts.IntegrationProbe] | None = None
    shell_hook: hosts.ShellHookProbe | None = None
    clis: tuple[str, ...] = field(default=machine.CLIS)
    config_path: str | None = None
    today: Callable[[], datetime.date] = datetime.date.today


async def examine(settings: Settings, around: Surroundings | None = None) -> list[Check]:
    """Run every check: the gateway (and its upstreams' circuits), the upstreams, the data
    directory, the shared store and Redis, the CLIs, the integrations, Claude Code's login,
    the shell hook and the price catalog's age. Network checks run together."""
    around = around or Surroundings()
    gateway, circuits, upstreams, store, redis, clis = await asyncio.gather(
        network.check_gateway(settings, around.config_path),
        network.check_circuits(settings),
        network.check_upstreams(settings),
        shared.check_store(settings),
        shared.check_redis(settings),
        machine.check_clis(around.clis, around.environ),
    )
    integrations = around.integrations or hosts.integration_probes(settings, around.environ)
    shell_hook = around.shell_hook or hosts.shell_hook_probe(around.environ)
    return [
        gateway,
        circuits,
        *upstreams,
        machine.check_data_dir(Path(settings.data_dir)),
        store,
        redis,
        *clis,
        *hosts.check_integrations(integrations),
        logins.check_claude_login(settings, around.environ),
        hosts.check_shell_hook(shell_hook),
        catalog.check_catalog(around.today()),
    ]
