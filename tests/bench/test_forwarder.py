"""The bare forwarder of the overhead benchmark, on loopback: in front of the mock provider it
relays a plain completion and an event stream byte for byte, and the peer benchmark runs it."""

from __future__ import annotations

import asyncio

import aiohttp

from skillstate.bench.harness import forwarder, mock_provider, wait_ready
from skillstate.bench.overhead import BODY
from skillstate.bench.peers import Arm, Workload, plan
from skillstate.support import jsonio

_PATH = "/v1/chat/completions"


async def _post(url: str, body: bytes) -> tuple[int, str, bytes]:
    async with aiohttp.ClientSession() as session:
        headers = {"content-type": "application/json"}
        async with session.post(url, data=body, headers=headers) as reply:
            return reply.status, reply.headers["content-type"], await reply.read()


async def _compare(mock: str, proxy: str) -> None:
    await wait_ready(mock + _PATH, BODY)
    await wait_ready(proxy + _PATH, BODY)
    for stream in (False, True):
        body = jsonio.dumps({**BODY, "stream": stream})
        direct = await _post(mock + _PATH, body)
        relayed = await _post(proxy + _PATH, body)
        assert direct[0] == 200
        assert relayed == direct
        kind = "text/event-stream" if stream else "application/json"
        assert relayed[1].startswith(kind)
    assert relayed[2].endswith(b"data: [DONE]\n\n")


def test_the_forwarder_relays_plain_and_streamed_replies_as_the_mock_sends_them() -> None:
    with mock_provider() as mock, forwarder(mock) as proxy:
        asyncio.run(_compare(mock, proxy.url))


def test_the_forwarder_arm_runs_by_default_on_both_workloads() -> None:
    chosen = plan([], None)
    assert Arm.FORWARDER in chosen.arms_for(Workload.SHORT)
    assert Arm.FORWARDER in chosen.arms_for(Workload.LONG)
