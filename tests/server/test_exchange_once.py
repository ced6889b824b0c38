"""Every client request served from an upstream gives its observers one ``Exchange``, finished
once (``Forward.recording``), whichever way it ends: a reply, relayed or through the round
loop; an upstream failure before the first byte or after it; a client that went away. A
refusal reaches no upstream and records nothing. Real loopback servers, no mocks."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from skillstate.economics.exchange import Exchange
from skillstate.server.forward import CLIENT_GONE
from skillstate.testing import ScriptedUpstream
from skillstate.testing.faults import Fault
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script
from skillstate.testing.replies import Reply

PATH = "/v1/chat/completions"
JSON_TYPE = {"Content-Type": "application/json"}
ROUTES = {"relay": "auto", "loop": "anthropic-messages"}
"""The upstream wire that makes a Chat request take each route (mode off)."""

over_routes = pytest.mark.parametrize("route", list(ROUTES))
over_streams = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])


def body(stream: bool) -> dict[str, Any]:
    return {"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}


async def post(url: str, sent: dict[str, Any] | bytes) -> tuple[int, bytes]:
    data = sent if isinstance(sent, bytes) else json.dumps(sent).encode()
    headers = {**JSON_TYPE, "x-skillstate-mode": "off"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=data, headers=headers) as r,
    ):
        return r.status, await r.read()


class Seen(list[Exchange]):
    """An observer: the exchanges it was told of, and an event set at the first."""

    def __init__(self) -> None:
        super().__init__()
        self.first = asyncio.Event()

    def __call__(self, exchange: Exchange) -> None:
        self.append(exchange)
        self.first.set()

    async def once(self) -> Exchange:
        """The one exchange, once it came and a moment passed for any other."""
        await asyncio.wait_for(self.first.wait(), timeout=5)
        await asyncio.sleep(0.05)
        assert len(self) == 1, [e.summary() for e in self]
        return self[0]


@over_routes
@over_streams
async def test_a_reply_is_recorded_once(route: str, stream: bool) -> None:
    seen = Seen()
    reply = Reply(text="hello there")
    async with (
        ScriptedUpstream(Script([reply])) as up,
        gateway_for(up.url, wire=ROUTES[route]) as gw,
    ):
        gw.context.observers.append(seen)
        status, _ = await post(gw.url + PATH, body(stream))
        exchange = await seen.once()
    assert status == exchange.status == 200
    assert exchange.elapsed_s > 0 and exchange.note is None
    assert exchange.forwarded_original == (route == "relay")
    if route == "relay":  # the express path: the reply as bytes, read by the recorder later
        assert exchange.request is None and exchange.response is None
        assert exchange.relayed is not None and exchange.relayed.reply is not None
    else:
        assert exchange.response is not None and len(exchange.metered) == 1


@over_routes
@over_streams
async def test_an_upstream_failure_before_the_first_byte_is_recorded_once(
    route: str, stream: bool
) -> None:
    seen = Seen()
    failure = Reply.failure(500, "the model fell over")
    async with (
        ScriptedUpstream(Script([failure])) as up,
        gateway_for(up.url, wire=ROUTES[route]) as gw,
    ):
        gw.context.observers.append(seen)
        status, _ = await post(gw.url + PATH, body(stream))
        exchange = await seen.once()
    assert status == exchange.status == 500
    assert exchange.response is None and exchange.attempts == [500]
    assert "the model fell over" in (exchange.note or "")


@over_routes
async def test_an_upstream_failure_mid_stream_is_recorded_once(route: str) -> None:
    seen = Seen()
    failure = Reply(text="a first word, then the connection drops", fault=Fault.RESET)
    async with (
        ScriptedUpstream(Script([failure])) as up,
        gateway_for(up.url, wire=ROUTES[route]) as gw,
    ):
        gw.context.observers.append(seen)
        status, got = await post(gw.url + PATH, body(stream=True))
        exchange = await seen.once()
    assert status == 200 and b"error" in got  # the client wire's own error event
    assert exchange.note is not None and "stream broke" in exchange.note


@over_routes
async def test_a_client_that_goes_away_is_recorded_once(route: str) -> None:
    seen = Seen()
    hold = asyncio.Event()
    reply = Reply(text="a b c d e f g h", hold=hold)
    async with (
        ScriptedUpstream(Script([reply])) as up,
        gateway_for(up.url, wire=ROUTES[route]) as gw,
    ):
        gw.context.observers.append(seen)
        data = json.dumps(body(stream=True)).encode()
        async with aiohttp.ClientSession() as session:
            r = await session.post(gw.url + PATH, data=data, headers=JSON_TYPE)
            await r.content.readany()
            r.close()  # gone mid-stream, while the upstream still generates
        await asyncio.wait_for(up.disconnected.wait(), timeout=5)
        exchange = await seen.once()
        hold.set()
    assert exchange.status == CLIENT_GONE and exchange.response is None
    assert exchange.note == "the client went away before its reply was complete"
    assert exchange.first_byte_s is not None


async def test_a_refusal_reaches_no_upstream_and_records_nothing() -> None:
    seen = Seen()
    async with ScriptedUpstream(Script([])) as up, gateway_for(up.url) as gw:
        gw.context.observers.append(seen)
        status, _ = await post(gw.url + PATH, b"[1, 2]")
        assert status == 400
        await asyncio.sleep(0.05)
    assert seen == [] and up.requests == []
