"""Bad input gets a clear error in the client's own wire shape, with the right status, and
the server keeps serving."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script

ROUTES = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "messages": "/v1/messages",
}


def _openai_error(body: dict[str, Any]) -> str:
    assert set(body) == {"error"}
    error = body["error"]
    assert isinstance(error["message"], str) and error["message"]
    assert "type" in error
    return str(error["message"])


def _anthropic_error(body: dict[str, Any]) -> str:
    assert body["type"] == "error"
    assert isinstance(body["error"]["type"], str)
    return str(body["error"]["message"])


def _message(route: str, body: dict[str, Any]) -> str:
    return _anthropic_error(body) if route == "messages" else _openai_error(body)


async def _post(url: str, data: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            url, data=data, headers={"content-type": "application/json", **(headers or {})}
        ) as r,
    ):
        return r.status, json.loads(await r.read())


CASES = [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "JSON object"),
    (b"", 400, "empty"),
    (b'{"messages": [], "input": "x", "max_tokens": 5}', 400, "model"),
    (b'{"model": 5, "messages": [], "input": "x", "max_tokens": 5}', 400, "model"),
]


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize(("data", "status", "needle"), CASES)
async def test_malformed_bodies(route: str, data: bytes, status: int, needle: str) -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        got, body = await _post(gw.url + ROUTES[route], data)
        assert got == status
        assert needle in _message(route, body)
        assert up.requests == []  # nothing reached the upstream


WRONG_TYPES = {
    "chat": {"model": "m", "messages": "hello"},
    "responses": {"model": "m", "input": 42},
    "messages": {"model": "m", "max_tokens": 5, "messages": {"role": "user"}},
}


@pytest.mark.parametrize("route", list(ROUTES))
async def test_wrong_types_name_the_field(route: str) -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        got, body = await _post(gw.url + ROUTES[route], json.dumps(WRONG_TYPES[route]).encode())
        assert got == 400
        assert ("messages" if route != "responses" else "input") in _message(route, body)


@pytest.mark.parametrize("route", list(ROUTES))
async def test_body_over_the_limit_is_413_request_too_large(route: str) -> None:
    """A body over ``max_body_bytes`` is no context window's overflow: each wire labels it
    request_too_large (OpenAI's code, Anthropic's type), and the message names the key."""
    big = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 5000}]})
    settings = {"max_body_bytes": 2048}
    async with ScriptedUpstream() as up, gateway_for(up.url, settings=settings) as gw:
        got, body = await _post(gw.url + ROUTES[route], big.encode())
        assert got == 413
        message = _message(route, body)
        assert "2,048 bytes" in message and "max_body_bytes" in message
        if route == "messages":
            assert body["error"]["type"] == "request_too_large"
        else:
            assert body["error"]["type"] == "invalid_request_error"
            assert body["error"]["code"] == "request_too_large"
        assert up.requests == []


async def test_responses_input_names_both_forms() -> None:
    """The Responses API's input is a string or an array of input items: a wrong type says
    both, and a string is served."""
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        url = gw.url + ROUTES["responses"]
        got, body = await _post(url, json.dumps({"model": "m", "input": 42}).encode())
        assert got == 400
        assert "input must be a string or an array of input items" in _openai_error(body)
        got, body = await _post(url, json.dumps({"model": "m", "input": "hello"}).encode())
        assert got == 200, body


async def test_unknown_route_and_wrong_method() -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw, aiohttp.ClientSession() as s:
        async with s.get(gw.url + "/v1/nothing-here") as r:
            assert r.status == 404
            body = await r.json()
            assert "/v1/nothing-here" in _openai_error(body)
            # An unknown URL, not a missing model: OpenAI's own code for it.
            assert body["error"]["code"] == "unknown_url"
        anthropic = {"anthropic-version": "2023-06-01"}
        async with s.post(gw.url + "/v1/messages/nothing", headers=anthropic) as r:
            assert r.status == 404
            assert (await r.json())["error"]["type"] == "not_found_error"
        async with s.get(gw.url + "/v1/messages", headers={"anthropic-version": "2023-06-01"}) as r:
            assert r.status == 405
            _anthropic_error(await r.json())


async def test_invalid_session_header_is_refused() -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        data = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
        got, body = await _post(
            gw.url + ROUTES["chat"], data, {"x-skillstate-session": "bad id with spaces"}
        )
        assert got == 400
        assert "x-skillstate-session" in _openai_error(body)


async def test_upstream_errors_reach_the_client_in_its_wire() -> None:
    failing = Reply.failure(429, "slow down please")
    data = json.dumps(
        {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    ).encode()
    async with ScriptedUpstream(Script([failing, failing])) as up:
        async with gateway_for(up.url) as same:
            got, body = await _post(same.url + ROUTES["messages"], data)
            assert got == 429 and _anthropic_error(body) == "slow down please"
        async with gateway_for(up.url, wire="openai-chat") as cross:
            got, body = await _post(cross.url + ROUTES["messages"], data)
            assert got == 429
            assert _anthropic_error(body) == "slow down please"
            assert body["error"]["type"] == "rate_limit_error"


async def test_unreachable_upstream_and_no_upstream() -> None:
    data = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    async with gateway_for("http://127.0.0.1:9") as gw:
        got, body = await _post(gw.url + ROUTES["chat"], data)
        assert got == 502 and "unreachable" in _openai_error(body)
    async with gateway_for(None) as gw:
        got, body = await _post(gw.url + ROUTES["chat"], data)
        assert got == 502 and "--upstream" in _openai_error(body)
        got, body = await _post(gw.url + ROUTES["chat"], b"{oops")
        assert got == 400  # and it is still serving after all of the above


async def test_an_overload_gets_the_client_wires_own_status() -> None:
    chat = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    async with ScriptedUpstream(Script([Reply.failure(529, "busy")])) as up:
        async with gateway_for(up.url, wire="anthropic-messages") as gw:
            got, body = await _post(gw.url + ROUTES["chat"], chat)
    assert got == 503 and _openai_error(body) == "busy"
    messages = json.dumps(
        {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    ).encode()
    async with ScriptedUpstream(Script([Reply.failure(503, "busy")])) as up:
        async with gateway_for(up.url, wire="openai-chat") as gw:
            got, body = await _post(gw.url + ROUTES["messages"], messages)
    assert got == 529 and body["error"]["type"] == "overloaded_error"


async def test_an_upstream_that_does_not_answer_in_time_is_a_timeout() -> None:
    """504 in the client's wire: Anthropic's own ``timeout_error``, OpenAI's ``server_error``."""

    released = asyncio.Event()

    async def silent(request: web.Request) -> web.Response:
        await released.wait()
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", silent)
    app.router.add_post("/v1/messages", silent)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    messages = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    try:
        url = f"http://127.0.0.1:{server.port}"
        async with gateway_for(url, settings={"upstream_timeout": 0.3}) as gw:
            got, body = await _post(gw.url + ROUTES["messages"], json.dumps(messages).encode())
            assert got == 504 and body["error"]["type"] == "timeout_error"
            got, body = await _post(gw.url + ROUTES["chat"], json.dumps(messages).encode())
            assert got == 504 and "in time" in _openai_error(body)
            assert body["error"]["type"] == "server_error"
    finally:
        released.set()
        await server.close()
