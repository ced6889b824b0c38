"""Upstream profiles through a real gateway (docs/upstreams.md): the scripted upstream declared
``compatible`` gets the Chat bodies a generic server takes from every client wire, its 500s
that say the request was invalid reach the client as 400s without a retry or a failure on its
circuit, and a call whose first byte did not come is not tried again there, while on the
``openai`` profile it is, after the abandoned call's connection was closed."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any

import aiohttp
import pytest

from skillstate.testing import Fault, Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script
from skillstate.testing.recording import RecordedRequest

SCHEMA = {"type": "object", "properties": {"key": {"type": "string"}}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}

RESPONSES = {
    "model": "test-model",
    "instructions": "You are terse.",
    "max_output_tokens": 16,
    "input": [
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "Sandbox: read-only."}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "k1?"}]},
        {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "v1"},
    ],
    "tools": [{"type": "function", "name": "lookup", "parameters": SCHEMA}],
}
"""Codex's shape: a developer item on every turn, a tool round trip, an output limit."""

MESSAGES = {
    "model": "test-model",
    "max_tokens": 5,
    "system": "You are terse.",
    "messages": [
        {"role": "user", "content": "k1?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call_1", "name": "lookup", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": [{"type": "text", "text": "v1"}, {"type": "text", "text": "ok"}],
                }
            ],
        },
    ],
    "tools": [{"name": "lookup", "input_schema": SCHEMA}],
}

CHAT = {
    "model": "test-model",
    "max_completion_tokens": 7,
    "messages": [
        {"role": "developer", "content": "You are terse."},
        {"role": "user", "content": "k1?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "v1"},
    ],
    "tools": [{"type": "function", "function": {"name": "lookup", "parameters": SCHEMA}}],
}

CLIENTS = {
    "/v1/responses": (RESPONSES, "You are terse.\n\nSandbox: read-only.", 16, "v1"),
    "/v1/messages": (MESSAGES, "You are terse.", 5, "v1\n\nok"),
    "/v1/chat/completions": (CHAT, "You are terse.", 7, "v1"),
}
"""Each client's body, and what the compatible Chat upstream must get of it: the one system
message, the output limit, the tool result's text."""

TOOLS_AT_ONCE = {"passthrough_until_boundary": False}
_sessions = itertools.count()


async def _post(url: str, body: dict[str, Any], mode: str = "off") -> tuple[int, Any]:
    headers = {"x-skillstate-session": f"profiles-{next(_sessions)}", "x-skillstate-mode": mode}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=body, headers=headers) as reply,
    ):
        return reply.status, await reply.json(content_type=None)


async def _health(url: str) -> Any:
    async with aiohttp.ClientSession() as session, session.get(url + "/health") as reply:
        return await reply.json()


def _posts(up: ScriptedUpstream) -> list[RecordedRequest]:
    return [request for request in up.requests if request.method == "POST"]


@pytest.mark.parametrize(
    ("path", "mode"),
    [
        ("/v1/responses", "off"),
        ("/v1/responses", "hybrid"),
        ("/v1/messages", "off"),
        ("/v1/messages", "hybrid"),
        # A Chat client's request the lanes rewrote (off, it is the client's own bytes: see
        # the pass-through test below).
        ("/v1/chat/completions", "hybrid"),
    ],
)
async def test_a_compatible_chat_upstream_gets_what_it_accepts(path: str, mode: str) -> None:
    body, system, limit, result = CLIENTS[path]
    settings = {"mode": mode, "collapse": TOOLS_AT_ONCE}
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, wire="openai-chat", profile="compatible", settings=settings) as gw,
    ):
        status, reply = await _post(gw.url + path, body, mode)
    assert status == 200, reply
    sent = _posts(up)[-1].json
    messages = sent["messages"]
    assert messages[0] == {"role": "system", "content": system}
    assert "developer" not in [m["role"] for m in messages]
    [assistant] = [m for m in messages if m.get("tool_calls")]
    assert assistant["content"] == ""
    [tool] = [m for m in messages if m["role"] == "tool"]
    assert tool["content"] == result
    assert sent["max_tokens"] == limit and "max_completion_tokens" not in sent


async def test_a_compatible_stream_keeps_asking_for_usage_and_is_fitted() -> None:
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, wire="openai-chat", profile="compatible") as gw,
    ):
        async with (
            aiohttp.ClientSession() as session,
            session.post(gw.url + "/v1/responses", json={**RESPONSES, "stream": True}) as r,
        ):
            assert r.status == 200
            await r.read()
    sent = _posts(up)[-1].json
    assert sent["stream_options"] == {"include_usage": True}
    assert sent["max_tokens"] == 16 and sent["messages"][0]["role"] == "system"


async def test_the_openai_profile_gets_openais_own_shape() -> None:
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, wire="openai-chat", profile="openai") as gw,
    ):
        status, _ = await _post(gw.url + "/v1/responses", RESPONSES)
    assert status == 200
    sent = _posts(up)[-1].json
    assert sent["max_completion_tokens"] == 16 and "max_tokens" not in sent
    assert [m["role"] for m in sent["messages"]][:2] == ["system", "developer"]
    [assistant] = [m for m in sent["messages"] if m.get("tool_calls")]
    assert assistant["content"] is None


async def test_a_pass_through_sends_the_clients_own_bytes_to_a_compatible_upstream() -> None:
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, profile="compatible") as gw,
        aiohttp.ClientSession() as session,
    ):
        raw = json.dumps(CHAT).encode()
        headers = {"content-type": "application/json", "x-skillstate-mode": "off"}
        async with session.post(gw.url + "/v1/chat/completions", data=raw, headers=headers) as r:
            assert r.status == 200
    assert _posts(up)[-1].body == raw


async def test_a_fallback_of_another_profile_gets_a_body_fitted_to_it() -> None:
    """The primary (``openai``) fails; the fallback (``compatible``) gets the request encoded
    anew for its own profile, not the primary's body."""
    async with (
        ScriptedUpstream(Script([Reply.failure(503, "down")])) as primary,
        ScriptedUpstream() as backup,
    ):
        tables = [
            {"name": "a", "base_url": primary.url, "wire": "openai-chat", "fallbacks": ["b"]},
            {"name": "b", "base_url": backup.url, "wire": "openai-chat", "profile": "compatible"},
        ]
        async with gateway_for(settings={"upstreams": tables}) as gw:
            status, reply = await _post(gw.url + "/v1/messages", MESSAGES)
    assert status == 200, reply
    assert "max_completion_tokens" in _posts(primary)[0].json
    sent = _posts(backup)[0].json
    assert sent["max_tokens"] == 5 and "max_completion_tokens" not in sent


LLAMA_CPP_PYTHON = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 0, "
    "'typed-dict', 'role'), 'msg': \"Input should be 'system'\", 'input': 'developer'}"
)


def _refused() -> Reply:
    """What llama-cpp-python answers a body its schema refuses: a 500 carrying the text."""
    return Reply.failure(500, LLAMA_CPP_PYTHON, "api_error")


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
async def test_a_500_validation_error_is_the_requests_fault_on_a_compatible_upstream(
    path: str,
) -> None:
    body = CLIENTS[path][0]
    settings = {"retries": 2, "circuit_min_requests": 1}
    async with (
        ScriptedUpstream(Script([_refused()])) as up,
        gateway_for(up.url, wire="openai-chat", profile="compatible", settings=settings) as gw,
    ):
        status, reply = await _post(gw.url + path, body)
        health = (await _health(gw.url))["upstreams"][0]
    assert status == 400, reply
    assert reply["error"]["type"] == "invalid_request_error"
    message = reply["error"]["message"]
    assert "refused the request as invalid (its HTTP 500)" in message
    assert "Input should be 'system'" in message
    assert len(_posts(up)) == 1  # not tried again
    assert health["circuit"] == "closed"
    assert health["circuit_window"]["failed"] == 0
    assert health["circuit_window"]["failed_tries"] == 0


async def test_the_same_500_from_the_openai_profile_is_the_servers_and_tried_again() -> None:
    settings = {"retries": 2, "retry_max_wait": 0.05}
    async with (
        ScriptedUpstream(Script([_refused()] * 3)) as up,
        gateway_for(up.url, wire="openai-chat", settings=settings) as gw,
    ):
        status, _ = await _post(gw.url + "/v1/chat/completions", CHAT)
        window = (await _health(gw.url))["upstreams"][0]["circuit_window"]
    assert status == 500
    assert len(_posts(up)) == 3
    assert window["failed"] == 1 and window["failed_tries"] == 3


async def test_no_retry_after_a_first_byte_timeout_on_a_compatible_upstream() -> None:
    settings = {"retries": 2, "first_byte_timeout": 0.5}
    async with (
        ScriptedUpstream(Script([Reply(fault=Fault.HANG)])) as up,
        gateway_for(up.url, wire="openai-chat", profile="compatible", settings=settings) as gw,
    ):
        status, reply = await _post(gw.url + "/v1/responses", RESPONSES)
        # The abandoned call's connection is closed all the same: the server sees it gone.
        await _gone(up)
    assert status == 504, reply
    assert "not tried again" in reply["error"]["message"]
    assert len(_posts(up)) == 1


async def _gone(up: ScriptedUpstream) -> None:
    await asyncio.wait_for(up.disconnected.wait(), 5)
    assert up.cancelled == 1


@pytest.mark.parametrize("profile", ["openai", "compatible"])
async def test_a_retry_after_a_first_byte_timeout_follows_the_closed_connection(
    profile: str,
) -> None:
    """On the ``openai`` profile (and on a compatible upstream whose table turns it on) the
    call is tried again, and the upstream saw the abandoned call's connection close before
    the retry arrived: a retry never runs beside the call it replaces."""
    script = Script([Reply(fault=Fault.HANG), Reply(text="Second try")])
    seen: list[int] = []
    table = {"name": "up", "wire": "openai-chat", "profile": profile}
    if profile == "compatible":
        table["retry_first_byte_timeout"] = True
    async with ScriptedUpstream() as up:

        def policy(request: RecordedRequest) -> Reply:
            seen.append(up.cancelled)
            return script(request)

        up.policy = policy
        settings = {
            "retries": 1,
            "first_byte_timeout": 0.5,
            "upstreams": [{**table, "base_url": up.url}],
        }
        async with gateway_for(settings=settings) as gw:
            status, reply = await _post(gw.url + "/v1/chat/completions", CHAT)
    assert status == 200, reply
    assert "Second try" in reply["choices"][0]["message"]["content"]
    assert seen == [0, 1]


async def test_the_retry_deadline_bounds_the_waits_for_a_first_byte() -> None:
    """A retry waits for its first byte no longer than the request's retry deadline: 1.5 s of
    first-byte timeout twice would be 3 s; the 2 s deadline ends it near 2 s."""
    settings = {"retries": 1, "first_byte_timeout": 1.5, "retry_deadline": 2.0}
    async with (
        ScriptedUpstream(Script([Reply(fault=Fault.HANG)] * 2)) as up,
        gateway_for(up.url, wire="openai-chat", settings=settings) as gw,
    ):
        started = time.monotonic()
        status, _ = await _post(gw.url + "/v1/chat/completions", CHAT)
        elapsed = time.monotonic() - started
    assert status == 504
    assert len(_posts(up)) == 2
    assert elapsed < 2.7, elapsed
