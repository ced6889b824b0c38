"""What crosses the gateway: the client's exact bytes on the same wire, credentials, headers,
query strings, and streams that pass through as they arrive."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from skillstate.conversation import StopReason, Wire
from skillstate.economics.exchange import Exchange
from skillstate.testing import Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script

# Odd spacing, key order and a big integer: anything but byte-forwarding would change them.
ODD_CHAT = (
    b'{ "messages" : [ {"content":"hi \\u00e9", "role":"user"} ],\n'
    b'  "seed": 123456789012345678901234567890, "model":"test-model"}'
)
ODD_MESSAGES = (
    b'{"max_tokens":  64, "model":"test-model",'
    b' "messages":[{"role":"user","content":"hi"}], "x_unknown": {"keep": [1, 2.50]}}'
)
ODD_RESPONSES = b'{"model":"test-model",  "input":"hi", "store": false, "zz": null}'

JSON_TYPE = {"content-type": "application/json"}


async def _post(url: str, body: bytes, **headers: str) -> tuple[int, dict[str, str], bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers={"content-type": "application/json", **headers}) as r,
    ):
        return r.status, dict(r.headers), await r.read()


async def test_same_wire_forwards_the_clients_original_bytes() -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        for path, body in (
            ("/v1/chat/completions", ODD_CHAT),
            ("/v1/messages", ODD_MESSAGES),
            ("/v1/responses", ODD_RESPONSES),
        ):
            status, headers, _ = await _post(gw.url + path, body)
            assert status == 200
            assert up.requests[-1].body == body
            assert "x-skillstate-translated" not in {k.lower() for k in headers}


async def test_translated_request_is_marked_and_valid_for_the_upstream_wire() -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url, wire="anthropic-messages") as gw:
        status, headers, raw = await _post(gw.url + "/v1/chat/completions", ODD_CHAT)
        assert status == 200, raw
        assert headers["x-skillstate-translated"] == "openai-chat->anthropic-messages"
        sent = up.requests[-1]
        assert sent.path == "/v1/messages"
        assert sent.json["messages"] == [{"role": "user", "content": "hi é"}] or sent.json[
            "messages"
        ][0]["content"] in ("hi é", [{"type": "text", "text": "hi é"}])
        assert isinstance(sent.json["max_tokens"], int)
        assert json.loads(raw)["object"] == "chat.completion"


async def test_client_credential_is_forwarded_when_no_key_is_configured() -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        await _post(gw.url + "/v1/chat/completions", ODD_CHAT, authorization="Bearer sk-client")
        assert up.requests[-1].headers["authorization"] == "Bearer sk-client"
        await _post(gw.url + "/v1/messages", ODD_MESSAGES, **{"x-api-key": "sk-ant-client"})
        assert up.requests[-1].headers["x-api-key"] == "sk-ant-client"


async def test_client_credential_moves_to_the_upstream_wires_header() -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url, wire="openai-chat") as gw:
        await _post(gw.url + "/v1/messages", ODD_MESSAGES, **{"x-api-key": "sk-ant-client"})
        sent = up.requests[-1].headers
        assert sent["authorization"] == "Bearer sk-ant-client"
        assert "x-api-key" not in sent


async def test_configured_key_replaces_the_clients() -> None:
    env = {"SKILLSTATE_API_KEY": "sk-configured"}
    async with ScriptedUpstream() as up, gateway_for(up.url, environ=env) as gw:
        await _post(gw.url + "/v1/chat/completions", ODD_CHAT, authorization="Bearer sk-client")
        assert up.requests[-1].headers["authorization"] == "Bearer sk-configured"
        await _post(gw.url + "/v1/messages", ODD_MESSAGES, **{"x-api-key": "sk-ant-client"})
        assert up.requests[-1].headers["x-api-key"] == "sk-configured"


async def test_query_string_and_wire_headers_cross_on_the_same_wire() -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        await _post(
            gw.url + "/v1/messages?beta=true",
            ODD_MESSAGES,
            **{"anthropic-beta": "tools-2024", "x-skillstate-session": "s1"},
        )
        sent = up.requests[-1]
        assert sent.query == "beta=true" or dict(sent.query) == {"beta": "true"}  # type: ignore[arg-type]
        assert sent.headers["anthropic-beta"] == "tools-2024"
        assert "x-skillstate-session" not in sent.headers


async def test_stream_reaches_the_client_before_the_upstream_finishes() -> None:
    hold = asyncio.Event()
    reply = Reply(text="first then the rest of a long answer", hold=hold)
    body = json.dumps(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    async with ScriptedUpstream(Script([reply])) as up, gateway_for(up.url) as gw:
        async with (
            aiohttp.ClientSession() as session,
            session.post(gw.url + "/v1/chat/completions", data=body, headers=JSON_TYPE) as r,
        ):
            first = await asyncio.wait_for(r.content.readany(), timeout=5)
            assert first.startswith(b"data: ")
            assert not hold.is_set()  # the upstream is still holding the rest back
            hold.set()
            rest = await r.read()
        assert (first + rest).rstrip().endswith(b"data: [DONE]")


async def test_client_disconnect_cancels_the_upstream_request() -> None:
    hold = asyncio.Event()
    reply = Reply(text="a b c d e f", hold=hold)
    body = json.dumps(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    async with ScriptedUpstream(Script([reply])) as up, gateway_for(up.url) as gw:
        async with aiohttp.ClientSession() as session:
            r = await session.post(gw.url + "/v1/chat/completions", data=body, headers=JSON_TYPE)
            await r.content.readany()
            r.close()  # the client goes away mid-stream, while the upstream is still generating
        await asyncio.wait_for(up.disconnected.wait(), timeout=5)
        assert up.cancelled == 1
        hold.set()


async def test_observer_rebuilds_the_streamed_response() -> None:
    """A relayed stream the gateway reads (a session's first request with tools, which the
    state lane reads; one it cannot change is relayed undecoded: ``test_express_shape``)."""
    seen: list[Exchange] = []
    reply = Reply(text="Hello world", calls=[ScriptedCall("ls", {"path": "."})])
    body = json.dumps(
        {
            "model": "m",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "ls", "parameters": {}}}],
        }
    ).encode()
    async with ScriptedUpstream(Script([reply, reply])) as up, gateway_for(up.url) as gw:
        gw.context.observers.append(seen.append)
        await _post(gw.url + "/v1/chat/completions", body)
        async with gateway_for(up.url, wire="anthropic-messages") as translated:
            translated.context.observers.append(seen.append)
            await _post(translated.url + "/v1/chat/completions", body)
    for exchange in seen:
        assert exchange.streamed and exchange.response is not None
        parts = exchange.response.message.parts
        assert getattr(parts[0], "text", None) == "Hello world"
        call = parts[1]
        assert getattr(call, "name", None) == "ls"
        assert json.loads(getattr(call, "arguments", "{}")) == {"path": "."}
        assert exchange.response.stop_reason is StopReason.TOOL_CALLS
        assert exchange.response.usage.input > 0 and exchange.response.usage.output > 0
    assert [e.upstream_wire for e in seen] == [Wire.CHAT, Wire.MESSAGES]
