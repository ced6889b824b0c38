"""The harness of the request-path and resilience tests: a scripted upstream, a gateway in front
of it, the driver of one client wire, and each reply as the client got it."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from internal_tools_clients import DRIVERS, PAIR_IDS, PAIRS, Driver

from skillstate.economics.exchange import Exchange
from skillstate.gateway import RunningGateway
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Policy

TOOLS_AT_ONCE = {"passthrough_until_boundary": False}
"""``[collapse]`` for a session offered the internal tools from its first request."""

over_pairs = pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
over_streams = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
over_modes = pytest.mark.parametrize("mode", ["off", "hybrid"])
_sessions = itertools.count()


@dataclass
class Got:
    """A reply as the client got it; header names are lower case."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()


@dataclass
class Rig:
    upstream: ScriptedUpstream
    gateway: RunningGateway
    driver: Driver
    stream: bool
    exchanges: list[Exchange] = field(default_factory=list)
    """What the gateway's observers were told, one per client request (``rigged`` fills it)."""

    async def post(self, mode: str = "hybrid", body: dict[str, Any] | None = None) -> Got:
        """``body`` (by default the driver's one-line task) in a session of its own."""
        headers = {"x-skillstate-session": f"rig-{next(_sessions)}", "x-skillstate-mode": mode}
        sent = body or self.driver.body("Look up k1.", [], stream=self.stream)
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.gateway.url + self.driver.path, json=sent, headers=headers) as r,
        ):
            lowered = {k.lower(): v for k, v in r.headers.items()}
            return Got(r.status, lowered, await r.read())

    async def health(self) -> Any:
        async with (
            aiohttp.ClientSession() as session,
            session.get(self.gateway.url + "/health") as r,
        ):
            return await r.json()


@contextlib.asynccontextmanager
async def rigged(
    pair: tuple[str, str], stream: bool, policy: Policy, **settings: Any
) -> AsyncIterator[Rig]:
    """A rig for ``pair`` (client wire, upstream wire) whose upstream follows ``policy``;
    ``settings`` as ``gateway_for`` takes them (retries are off unless they say so)."""
    client, upstream = pair
    # The internal tools from the first request: these tests drive the round loop, which
    # runs the same way once a session's first boundary brought them.
    settings.setdefault("collapse", TOOLS_AT_ONCE)
    async with (
        ScriptedUpstream(policy) as up,
        gateway_for(up.url, wire=upstream, settings=settings) as gw,
    ):
        rig = Rig(up, gw, DRIVERS[client], stream)
        gw.context.observers.append(rig.exchanges.append)
        yield rig
