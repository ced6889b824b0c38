"""Hostile input gets a 4xx in the client's own wire shape, never a 500 or plain text, and the
gateway keeps serving: JSON that breaks a reader or a writer, request lines and headers over
the parser's limits, and requests over the configured counts."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest

from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for

ROUTES = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "messages": "/v1/messages",
}


def _wire_error(route: str, body: dict[str, Any]) -> str:
    """The error's message, after checking the body is the wire's own error shape."""
    if route == "messages":
        assert body["type"] == "error" and set(body["error"]) >= {"type", "message"}
    else:
        assert set(body) == {"error"} and {"message", "type"} <= set(body["error"])
    message = body["error"]["message"]
    assert isinstance(message, str) and message
    return message


def _deep(levels: int, inner: str = "0") -> str:
    return "[" * levels + inner + "]" * levels


def _body(route: str, extra: str) -> bytes:
    """A valid request of ``route`` with ``"x": <extra>`` spliced in as raw JSON."""
    base = '{"model": "m", "max_tokens": 5, "x": ' + extra + ", "
    if route == "responses":
        return (base + '"input": "hi"}').encode()
    return (base + '"messages": [{"role": "user", "content": "hi"}]}').encode()


BIG = "1234567890123456789012"  # 22 digits: the exact-integer reader's path

HOSTILE_JSON = {
    "deep-with-long-number": _deep(5000, BIG),
    "1000-deep": _deep(1000),
    "just-over-the-depth-limit": _deep(128),
    "lone-surrogate-with-long-number": '["\\ud800", ' + BIG + "]",
    "nan-with-long-number": f"[NaN, {BIG}]",
}


async def _post(url: str, data: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    headers = {"content-type": "application/json", **(headers or {})}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=data, headers=headers) as reply,
    ):
        return reply.status, json.loads(await reply.read())


@pytest.mark.parametrize("route", list(ROUTES))
async def test_hostile_json_is_a_400_in_the_wire(route: str) -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        for name, extra in HOSTILE_JSON.items():
            status, body = await _post(gw.url + ROUTES[route], _body(route, extra))
            assert status == 400, name
            _wire_error(route, body)
        status, body = await _post(gw.url + ROUTES[route], _body(route, _deep(100, BIG)))
        assert status == 200  # deep but within the limit, big integer included: served
        assert len(up.requests) == 1


async def test_deep_tool_schemas_translated_to_another_wire_are_refused_not_500() -> None:
    """The writer's fallback used to fail on a deep value it had to re-encode for another
    wire; now the reader refuses what the writer could not write back."""
    schema = _deep(300, '{"type": "object"}')
    tool = '{"name": "t", "input_schema": {"type": "object", "x": ' + schema + "}}"
    data = (
        '{"model": "m", "max_tokens": 5, "tools": [' + tool + '], "x": ' + BIG + ", "
        '"messages": [{"role": "user", "content": "hi"}]}'
    ).encode()
    async with ScriptedUpstream() as up, gateway_for(up.url, wire="openai-chat") as gw:
        status, body = await _post(gw.url + ROUTES["messages"], data)
    assert status == 400 and "128 levels" in _wire_error("messages", body)
    assert up.requests == []


DECODED = {"mode": "paper"}
"""A mode whose lanes read every request: the gateway decodes it (a request the express path
relays in mode off or hybrid is not decoded, and the upstream judges what it holds)."""


async def test_a_list_where_a_tool_call_type_belongs_is_a_400() -> None:
    data = json.dumps(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "type": ["function"], "function": {"name": "f"}},
                    ],
                },
            ],
        }
    ).encode()
    async with ScriptedUpstream() as up, gateway_for(up.url, settings=DECODED) as gw:
        status, body = await _post(gw.url + ROUTES["chat"], data)
    assert status == 400
    _wire_error("chat", body)


async def _raw(url: str, head: bytes, body: bytes = b"{}") -> tuple[int, Any]:
    """Send ``head`` (request line and headers, without the blank line) by hand."""
    parts = urlsplit(url)
    assert parts.hostname and parts.port
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        length = b"Content-Length: %d\r\n" % len(body)
        host = b"\r\nHost: " + parts.netloc.encode()
        common = host + b"\r\nConnection: close\r\nContent-Type: application/json\r\n"
        writer.write(head + common + length + b"\r\n" + body)
        await writer.drain()
        answer = await reader.read()
    finally:
        writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    headers, _, content = rest.partition(b"\r\n\r\n")
    assert b"application/json" in headers.lower()
    return int(status_line.split()[1]), json.loads(content)


def _headers(count: int) -> bytes:
    return b"".join(b"\r\nX-Filler-%d: 1" % i for i in range(count))


@pytest.mark.parametrize("route", list(ROUTES))
async def test_headers_over_the_parsers_limits_are_refused_in_the_wire(route: str) -> None:
    line = b"POST " + ROUTES[route].encode() + b" HTTP/1.1"
    async with gateway_for(None) as gw:
        status, body = await _raw(gw.url, line + b"\r\nX-Big: " + b"a" * 9000)
        assert status == 431 and "8,190 bytes" in _wire_error(route, body)
        status, body = await _raw(gw.url, line + _headers(1000))
        assert status == 431 and "128 headers" in _wire_error(route, body)
        url_line = b"POST " + ROUTES[route].encode() + b"?q=" + b"a" * 9000 + b" HTTP/1.1"
        status, body = await _raw(gw.url, url_line)
        assert status == 431
        _wire_error(route, body)


async def test_an_anthropic_version_header_picks_anthropics_shape() -> None:
    line = b"POST /v1/unknown HTTP/1.1\r\nanthropic-version: 2023-06-01"
    async with gateway_for(None) as gw:
        status, body = await _raw(gw.url, line + _headers(200))
        assert status == 431
        _wire_error("messages", body)
        status, body = await _raw(gw.url, b"POST /v1/unknown HTTP/1.1" + _headers(200))
        assert status == 431
        _wire_error("chat", body)  # nothing to tell: OpenAI's shape


async def test_malformed_http_is_a_400_in_json() -> None:
    async with gateway_for(None) as gw:
        status, body = await _raw(gw.url, b"POST /v1/messages HTTP/1.1\r\nBad Header Line")
        assert status == 400
        assert "malformed HTTP request" in _wire_error("messages", body)


async def test_the_header_limits_are_settings() -> None:
    settings = {"max_header_line_bytes": 1000, "max_headers": 20}
    line = b"POST /v1/chat/completions HTTP/1.1"
    async with ScriptedUpstream() as up, gateway_for(up.url, settings=settings) as gw:
        status, body = await _raw(gw.url, line + b"\r\nX-Big: " + b"a" * 1500)
        assert status == 431 and "1,000 bytes" in _wire_error("chat", body)
        status, body = await _raw(gw.url, line + _headers(30))
        assert status == 431 and "20 headers" in _wire_error("chat", body)
        chat = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
        status, body = await _raw(gw.url, line + b"\r\nX-Ok: " + b"a" * 900, chat.encode())
        assert status == 200


def _chat(messages: int, parts_each: int) -> bytes:
    content = [{"type": "text", "text": "x"}] * parts_each
    return json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": content}] * messages}
    ).encode()


async def test_messages_and_parts_per_request_are_bounded() -> None:
    settings = {"max_messages": 10, "max_parts": 25, **DECODED}
    async with ScriptedUpstream() as up, gateway_for(up.url, settings=settings) as gw:
        status, body = await _post(gw.url + ROUTES["chat"], _chat(11, 1))
        assert status == 400 and "max_messages" in _wire_error("chat", body)
        status, body = await _post(gw.url + ROUTES["chat"], _chat(9, 3))
        assert status == 400 and "max_parts" in _wire_error("chat", body)
        messages = json.dumps(
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}] * 11}
        ).encode()
        status, body = await _post(gw.url + "/v1/messages/count_tokens", messages)
        assert status == 400 and "max_messages" in _wire_error("messages", body)
        assert up.requests == []  # none of those reached it
        status, _ = await _post(gw.url + ROUTES["chat"], _chat(8, 3))
        assert status == 200
