"""``GET /v1/responses`` upgraded to a WebSocket, on real loopback with aiohttp's client: each
``response.create`` frame is served like ``POST /v1/responses`` with ``stream: true`` (the
same events, one per text frame; one exchange each), a continuation of the socket's last
response reaches the upstream written out in full, a warmup costs no upstream call, failures
are ``error`` frames on a socket that stays open, and the guard decides before the upgrade."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from skillstate.economics.allowance import period_of
from skillstate.economics.exchange import Exchange
from skillstate.protocols.sse import SSEDecoder
from skillstate.storage.keys import KeyLimits
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.keys import GatewayKeys, bearer
from skillstate.testing.policies import Script
from skillstate.testing.replies import ScriptedError

TOKEN = "gateway-token-0123456789abcdef"
BODY = {"model": "test-model", "input": "Say hello.", "store": False}
ENDS = ("response.completed", "response.failed", "response.incomplete", "error")


def create(**body: Any) -> dict[str, Any]:
    return {"type": "response.create", **body}


async def reply_frames(socket: aiohttp.ClientWebSocketResponse) -> list[dict[str, Any]]:
    """The frames of one reply, up to and including its last."""
    frames: list[dict[str, Any]] = []
    while not frames or frames[-1]["type"] not in ENDS:
        message = await socket.receive(timeout=10)
        assert message.type is aiohttp.WSMsgType.TEXT, message
        frames.append(json.loads(message.data))
    return frames


async def posted_events(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url + "/v1/responses", json={**body, "stream": True}) as reply,
    ):
        assert reply.status == 200
        raw = await reply.read()
    return [json.loads(e.data) for e in SSEDecoder().feed(raw) if e.data != "[DONE]"]


@asynccontextmanager
async def socket_to(
    url: str, path: str = "/v1/responses", **headers: str
) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(url + path, headers=headers) as socket,
    ):
        yield socket


@pytest.mark.parametrize("path", ["/v1/responses", "/responses"])
async def test_a_frame_gets_the_events_a_post_gets(path: str) -> None:
    """Two fresh upstreams play the same reply; the socket's frames are the stream's events."""
    script = [Reply(text="Hello there, how are you?")]
    async with ScriptedUpstream(Script(script)) as up, gateway_for(up.url) as gw:
        posted = await posted_events(gw.url, BODY)
    async with ScriptedUpstream(Script(script)) as up, gateway_for(up.url) as gw:
        exchanges: list[Exchange] = []
        gw.context.observers.append(exchanges.append)
        async with socket_to(gw.url, path) as socket:
            await socket.send_json(create(**BODY, stream=False))
            framed = await reply_frames(socket)
        assert json.loads(up.requests[0].body)["stream"] is True
    assert framed == posted and framed[-1]["type"] == "response.completed"
    assert [(e.status, e.streamed) for e in exchanges] == [(200, True)]


async def test_a_continuation_reaches_the_upstream_written_out() -> None:
    """``previous_response_id`` naming the socket's last response, with ``store: false``: the
    upstream hears the whole conversation, and no reference it could not resolve."""
    script = Script([Reply(text="Hello Ada"), Reply(text="Your name is Ada")])
    async with ScriptedUpstream(script) as up, gateway_for(up.url) as gw:
        exchanges: list[Exchange] = []
        gw.context.observers.append(exchanges.append)
        async with socket_to(gw.url) as socket:
            await socket.send_json(create(**{**BODY, "input": "My name is Ada."}))
            first = (await reply_frames(socket))[-1]["response"]
            asked = [{"type": "message", "role": "user", "content": "What is my name?"}]
            await socket.send_json(
                create(**BODY | {"input": asked}, previous_response_id=first["id"])
            )
            second = await reply_frames(socket)
    assert second[-1]["type"] == "response.completed", second
    heard = json.loads(up.requests[1].body)
    assert "previous_response_id" not in heard
    items = heard["input"]
    assert items[0] == {"type": "message", "role": "user", "content": "My name is Ada."}
    assert items[1]["role"] == "assistant" and "Hello Ada" in json.dumps(items[1])
    assert items[2:] == asked
    assert len(exchanges) == 2 and all(e.status == 200 for e in exchanges)


async def test_another_reference_is_left_to_the_http_route() -> None:
    """An id the socket did not answer goes up as it came (a Responses upstream holds it)."""
    async with ScriptedUpstream(Script([Reply(text="ok")])) as up, gateway_for(up.url) as gw:
        async with socket_to(gw.url) as socket:
            await socket.send_json(create(**BODY, previous_response_id="resp_stored_elsewhere"))
            await reply_frames(socket)
    assert json.loads(up.requests[0].body)["previous_response_id"] == "resp_stored_elsewhere"


async def test_a_warmup_is_answered_without_the_upstream_and_continued() -> None:
    async with ScriptedUpstream(Script([Reply(text="ok")])) as up, gateway_for(up.url) as gw:
        exchanges: list[Exchange] = []
        gw.context.observers.append(exchanges.append)
        async with socket_to(gw.url) as socket:
            system = [{"type": "message", "role": "developer", "content": "Be brief."}]
            await socket.send_json(create(**BODY | {"input": system}, generate=False))
            warm = await reply_frames(socket)
            assert up.requests == [] and exchanges == []
            asked = [{"type": "message", "role": "user", "content": "Hi"}]
            response_id = warm[-1]["response"]["id"]
            await socket.send_json(
                create(**BODY | {"input": asked}, previous_response_id=response_id)
            )
            await reply_frames(socket)
    assert [frame["type"] for frame in warm] == ["response.created", "response.completed"]
    assert warm[-1]["response"]["output"] == []
    assert json.loads(up.requests[0].body)["input"] == system + asked
    assert len(exchanges) == 1


async def test_failures_are_error_frames_and_the_socket_stays_open() -> None:
    limited = Reply(error=ScriptedError(429, "slow down", "rate_limit_error"))
    script = Script([limited, Reply(text="fine now")])
    async with ScriptedUpstream(script) as up, gateway_for(up.url) as gw:
        async with socket_to(gw.url) as socket:
            await socket.send_str("{not json")
            bad = await reply_frames(socket)
            await socket.send_json({"type": "session.update"})
            unknown = await reply_frames(socket)
            await socket.send_json(create(**BODY))
            refused = await reply_frames(socket)
            await socket.send_json(create(model="test-model"))  # no input
            invalid = await reply_frames(socket)
            await socket.send_json(create(**BODY))
            served = await reply_frames(socket)
    assert [(f[-1]["type"], f[-1]["status"]) for f in (bad, unknown)] == [("error", 400)] * 2
    assert (
        refused == [{"type": "error", "status": 429, "error": refused[0]["error"]}]
        and "slow down" in refused[0]["error"]["message"]
    )
    assert invalid[-1]["type"] == "error" and invalid[-1]["status"] == 400
    assert served[-1]["type"] == "response.completed"
    assert len(up.requests) == 2


async def test_a_plain_get_is_not_allowed() -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        async with aiohttp.ClientSession() as session:
            async with session.get(gw.url + "/v1/responses") as reply:
                assert reply.status == 405
                body = await reply.json()
    assert "GET is not allowed" in body["error"]["message"]


async def test_the_guard_decides_before_the_upgrade() -> None:
    """With a token: none, or a wrong one, is refused with 401 before the upgrade; a foreign
    Origin with 403; the token opens the socket and never travels upstream."""
    environ = {"SKILLSTATE_AUTH_TOKEN": TOKEN}
    script = Script([Reply(text="ok")])
    async with ScriptedUpstream(script) as up, gateway_for(up.url, environ=environ) as gw:
        for headers, status in (
            ({}, 401),
            ({"Authorization": "Bearer nope"}, 401),
            ({"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"}, 403),
        ):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                async with socket_to(gw.url, **headers):
                    pass
            assert refused.value.status == status, headers
        assert up.requests == []
        async with socket_to(gw.url, Authorization=f"Bearer {TOKEN}") as socket:
            await socket.send_json(create(**BODY))
            served = await reply_frames(socket)
    assert served[-1]["type"] == "response.completed"
    assert TOKEN not in json.dumps(dict(up.requests[0].headers))


async def test_a_binary_frame_and_a_body_over_the_limit_are_refused() -> None:
    """A frame is the body of a request: text only, and within ``max_body_bytes``."""
    settings = {"max_body_bytes": 4096}
    async with ScriptedUpstream() as up, gateway_for(up.url, settings=settings) as gw:
        async with socket_to(gw.url) as socket:
            await socket.send_bytes(b"{}")
            binary = await reply_frames(socket)
            await socket.send_json(create(**BODY | {"input": "x" * 8000}))
            large = await reply_frames(socket)
    assert [binary[-1]["status"], large[-1]["status"]] == [400, 413]
    assert up.requests == []


async def test_a_tenants_socket_serves_its_own_sessions_with_its_budget() -> None:
    """A socket opened with a tenant's key: each frame is that tenant's (its session under its
    name, the key off the provider's request), and the key's budget holds every frame."""
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        exchanges: list[Exchange] = []
        gw.context.observers.append(exchanges.append)
        keys = GatewayKeys(gw)
        text, _ = await keys.make("alice", limits=KeyLimits(budget_usd=1e-9))
        headers = {**bearer(text), "x-skillstate-session": "s1"}
        async with socket_to(gw.url, **headers) as socket:
            await socket.send_json(create(**BODY))
            refused = await reply_frames(socket)
        assert refused[-1]["type"] == "error" and "budget" in json.dumps(refused[-1])
        assert not up.requests  # over its budget: nothing went upstream
        text, _ = await keys.make("alice")
        async with socket_to(gw.url, **{**bearer(text), "x-skillstate-session": "s1"}) as socket:
            await socket.send_json(create(**BODY))
            served = await reply_frames(socket)
        assert served[-1]["type"] == "response.completed"
        assert [e.session for e in exchanges][-1] == "alice/s1"
        assert text not in json.dumps(dict(up.requests[-1].headers))


@pytest.mark.parametrize("ends", ["revoked", "expired"])
async def test_a_key_that_ends_ends_its_socket(ends: str) -> None:
    """A socket is no older than its key: once the key it was opened with is revoked, or has
    expired, its next frame is refused (401, nothing upstream) and the socket closed, as a
    ``POST`` with that key is refused. Another key keeps the keys in use."""
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        keys = GatewayKeys(gw)
        await keys.make("bob")
        lifetime = 3.0
        given = {"expires": time.time() + lifetime} if ends == "expired" else {}
        text, key = await keys.make("alice", **given)
        async with socket_to(gw.url, **bearer(text)) as socket:
            await socket.send_json(create(**BODY))
            assert (await reply_frames(socket))[-1]["type"] == "response.completed"
            if ends == "revoked":
                assert await keys.store.revoke(key.id, time.time()) is not None
            else:
                await asyncio.sleep(lifetime)
            await socket.send_json(create(**BODY))
            refused = await reply_frames(socket)
            assert refused[-1]["type"] == "error" and refused[-1]["status"] == 401, refused
            closed = await socket.receive(timeout=10)
        async with (
            aiohttp.ClientSession() as session,
            session.post(gw.url + "/v1/responses", json=BODY, headers=bearer(text)) as reply,
        ):
            assert reply.status == 401
    assert closed.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED), closed
    assert len(up.requests) == 1  # only the frame sent while the key was good


async def test_a_ping_is_answered_while_a_reply_is_on_its_way() -> None:
    """A client's keepalive pings while the upstream has said nothing yet: each is answered,
    so the socket lives to carry the reply (aiohttp's ``heartbeat`` gives up without)."""
    async with ScriptedUpstream(Script([Reply(text="ok", delay=2.0)])) as up:
        async with gateway_for(up.url) as gw, aiohttp.ClientSession() as session:
            async with session.ws_connect(gw.url + "/v1/responses", heartbeat=0.4) as socket:
                await socket.send_json(create(**BODY))
                served = await reply_frames(socket)
    assert served[-1]["type"] == "response.completed"


async def test_a_close_mid_reply_ends_its_upstream_call_and_settles_its_hold() -> None:
    """The client closes its socket while a reply streams: the close is answered at once,
    the upstream call is closed, the exchange says the client left, and the key holds
    nothing afterwards."""
    slow = Reply(text="word " * 400, chunk_delay=0.05)
    async with ScriptedUpstream(Script([slow])) as up, gateway_for(up.url) as gw:
        exchanges: list[Exchange] = []
        gw.context.observers.append(exchanges.append)
        text, key = await GatewayKeys(gw).make("alice", limits=KeyLimits(budget_usd=5.0))
        async with socket_to(gw.url, **bearer(text)) as socket:
            await socket.send_json(create(**BODY))
            for _ in range(5):
                assert (await socket.receive(timeout=10)).type is aiohttp.WSMsgType.TEXT
            started = time.monotonic()
            await socket.close()
            assert time.monotonic() - started < 2  # not after the whole reply (20 s)
        await asyncio.wait_for(up.disconnected.wait(), 5)
        assert gw.context.budgets is not None
        await gw.context.budgets.drain()
        now = time.time()
        tally = await gw.context.budgets.store.tally(key.id, period_of("month", now), now)
    assert [e.status for e in exchanges] == [499]
    assert tally.held == 0 and tally.spent > 0
