"""Codex signed in with ChatGPT, through the gateway to the ChatGPT backend (its fake,
``testing.chatgpt_backend``): a Responses request with a ChatGPT login goes to
``chatgpt_base_url`` whatever its model, with every header the client sent; a rewrite keeps
that backend's rules (``input`` only; ``instructions``, ``include``, ``store`` and ``stream``
as sent; no ``max_output_tokens``; encrypted items byte for byte); a request whose rewrite
would break them goes up as it came. Other logins keep their upstream."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from skillstate.testing import ScriptedUpstream
from skillstate.testing.chatgpt_backend import ACCOUNT, TOKEN, ChatGPTBackend
from skillstate.testing.faults import Fault
from skillstate.testing.gateway import RunningGateway, gateway_for
from skillstate.testing.policies import Script
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedCall

CODEX_HEADERS = {
    "authorization": f"Bearer {TOKEN}",
    "chatgpt-account-id": ACCOUNT,
    "originator": "codex_exec",
    "version": "0.171.0",
    "session_id": "sess-chatgpt-1",
    "openai-beta": "responses=experimental",
    "content-type": "application/json",
}
INSTRUCTIONS = "You are Codex, a coding agent. Keep these words exactly."
REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [],
    "content": None,
    "encrypted_content": "gAAAAB-opaque-reasoning-1",
}
COMPACTION = {"type": "compaction", "encrypted_content": "gAAAAB-opaque-compaction-1"}
TOOLS = [
    {
        "type": "function",
        "name": "exec_command",
        "description": "Run a command.",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    }
]


def codex_body(**extra: Any) -> dict[str, Any]:
    """A request as Codex sends it with a ChatGPT login: streamed, not stored, encrypted
    reasoning asked for and sent back, a compaction item from an earlier turn."""
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    call = {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"}
    out = {"type": "function_call_output", "call_id": "c1", "output": "listing"}
    body = {
        "model": "gpt-5-codex",
        "instructions": INSTRUCTIONS,
        "input": [COMPACTION, user, REASONING, call, out],
        "tools": TOOLS,
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "stream": True,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "sess-chatgpt-1",
    }
    body.update(extra)
    return body


async def post(
    gw: RunningGateway, body: dict[str, Any] | bytes, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with (
        aiohttp.ClientSession() as http,
        http.post(gw.url + "/v1/responses", data=raw, headers=headers or CODEX_HEADERS) as r,
    ):
        return r.status, await r.read(), dict(r.headers)


def model_requests(backend: ScriptedUpstream) -> list[RecordedRequest]:
    return [r for r in backend.requests if r.method == "POST"]


def settings(backend: ChatGPTBackend, **more: Any) -> dict[str, Any]:
    return {"chatgpt_base_url": backend.base_url, **more}


async def test_a_chatgpt_login_goes_to_the_backend_with_every_header() -> None:
    async with (
        ScriptedUpstream() as api,
        ChatGPTBackend(Script([Reply(text="done")])) as backend,
        gateway_for(api.url, settings=settings(backend, mode="off")) as gw,
    ):
        status, body, headers = await post(gw, codex_body())
    assert status == 200, body
    assert b"response.completed" in body and b"done" in body
    assert api.requests == []  # the API upstream never saw the login
    (sent,) = model_requests(backend)
    assert sent.path == "/responses"
    for name, value in CODEX_HEADERS.items():
        assert sent.headers.get(name) == value, name
    assert backend.broken == []
    assert headers["x-skillstate-upstream"] == "chatgpt"


async def test_an_api_key_keeps_its_upstream() -> None:
    api_key = {**CODEX_HEADERS, "authorization": "Bearer sk-test"}
    async with (
        ScriptedUpstream(Script([Reply(text="via the API")])) as api,
        ChatGPTBackend() as backend,
        gateway_for(api.url, settings=settings(backend, mode="off")) as gw,
    ):
        status, body, _ = await post(gw, codex_body(model="test-model"), api_key)
    assert status == 200, body
    assert backend.requests == [] and len(api.requests) == 1


async def test_the_hybrid_rewrite_changes_input_only_and_keeps_encrypted_items() -> None:
    """Hybrid mode with the internal tools offered at once: the request is rewritten (the
    gateway's tools join Codex's), and still every rule holds and every encrypted item and
    ``instructions`` arrive as Codex sent them."""
    collapse = {"passthrough_until_boundary": False}
    async with (
        ScriptedUpstream() as api,
        ChatGPTBackend(Script([Reply(text="rewritten and fine")])) as backend,
        gateway_for(api.url, settings=settings(backend, collapse=collapse)) as gw,
    ):
        status, body, headers = await post(gw, codex_body())
    assert status == 200, body
    assert headers.get("x-skillstate-mode") == "hybrid"
    (sent,) = model_requests(backend)
    assert backend.broken == []
    got = sent.json
    assert isinstance(got, dict)
    names = [tool.get("name") for tool in got["tools"]]
    assert "exec_command" in names and "skill_state" in names  # rewritten
    assert got["instructions"] == INSTRUCTIONS
    assert got["include"] == ["reasoning.encrypted_content"]
    assert got["store"] is False and got["stream"] is True
    assert "max_output_tokens" not in got
    assert REASONING in got["input"] and COMPACTION in got["input"]
    for item in (REASONING, COMPACTION):
        assert item["encrypted_content"].encode() in sent.body


@pytest.mark.parametrize(
    ("extra", "rule"),
    [
        ({"store": True}, "Store must be set to false"),
        ({"max_output_tokens": 64}, "Unsupported parameter: max_output_tokens"),
        ({"stream": False}, "Stream must be set to true"),
    ],
    ids=["store", "max_output_tokens", "stream"],
)
async def test_the_fake_refuses_what_the_backend_refuses(extra: dict[str, Any], rule: str) -> None:
    async with ChatGPTBackend() as backend, aiohttp.ClientSession() as http:
        url = backend.base_url + "/responses"
        async with http.post(url, json=codex_body(**extra), headers=CODEX_HEADERS) as r:
            assert r.status == 400
            assert rule in (await r.json())["error"]["message"]
        no_account = {k: v for k, v in CODEX_HEADERS.items() if k != "chatgpt-account-id"}
        async with http.post(url, json=codex_body(), headers=no_account) as r:
            assert r.status == 401
        body = codex_body()
        del body["instructions"]
        async with http.post(url, json=body, headers=CODEX_HEADERS) as r:
            assert r.status == 400
            assert "Instructions are required" in (await r.json())["error"]["message"]


async def test_a_rewrite_the_backend_would_misread_goes_up_as_it_came() -> None:
    """The style lane adds its instruction to the system prompt, which on this wire is
    ``instructions``, Codex's own: for the ChatGPT backend the gateway sends the client's
    bytes instead, exactly."""
    raw = json.dumps(codex_body(), indent=1).encode()  # bytes no encoder writes
    lanes = {"lanes": "compaction,style,state"}
    async with (
        ScriptedUpstream() as api,
        ChatGPTBackend(Script([Reply(text="as it came")])) as backend,
        gateway_for(api.url, settings=settings(backend, **lanes)) as gw,
    ):
        status, body, headers = await post(gw, raw)
    assert status == 200, body
    assert headers.get("x-skillstate-mode") == "off"
    (sent,) = model_requests(backend)
    assert sent.body == raw
    assert backend.broken == []


async def test_the_gateways_own_rounds_keep_the_rules() -> None:
    """A round the gateway writes itself (the continuation after it answered its own
    ``recall`` call) is streamed, not stored, with no output limit and Codex's
    instructions."""
    recall = ScriptedCall("recall", {"query": "anything"})
    collapse = {"passthrough_until_boundary": False}
    async with (
        ScriptedUpstream() as api,
        ChatGPTBackend(Script([Reply(calls=[recall]), Reply(text="after recall")])) as backend,
        gateway_for(api.url, settings=settings(backend, collapse=collapse)) as gw,
    ):
        status, body, _ = await post(gw, codex_body())
    assert status == 200, body
    assert b"after recall" in body
    _, second = model_requests(backend)
    assert backend.broken == []
    assert isinstance(second.json, dict)
    assert second.json["instructions"] == INSTRUCTIONS
    assert second.headers.get("chatgpt-account-id") == ACCOUNT


async def test_the_model_list_of_a_chatgpt_login_is_the_backends() -> None:
    async with (
        ScriptedUpstream(models=("api-model",)) as api,
        ChatGPTBackend(models=("gpt-5-codex",)) as backend,
        gateway_for(api.url, settings=settings(backend)) as gw,
        aiohttp.ClientSession() as http,
        http.get(gw.url + "/v1/models?client_version=0.171.0", headers=CODEX_HEADERS) as r,
    ):
        listed = await r.json()
    assert [m["id"] for m in listed["data"]] == ["gpt-5-codex"]
    (asked,) = backend.requests
    assert asked.path == "/models" and asked.query == {"client_version": "0.171.0"}


async def test_compact_goes_to_the_backend_and_its_items_come_back_whole() -> None:
    async with (
        ScriptedUpstream() as api,
        ChatGPTBackend() as backend,
        gateway_for(api.url, settings=settings(backend, mode="off")) as gw,
        aiohttp.ClientSession() as http,
        http.post(
            gw.url + "/v1/responses/compact",
            json=codex_body(stream=None),
            headers=CODEX_HEADERS,
        ) as r,
    ):
        status, answer = r.status, await r.json()
    assert status == 200, answer
    assert answer["output"][-1]["type"] == "compaction"
    (asked,) = backend.requests
    assert asked.path == "/responses/compact"


async def test_an_empty_stream_is_not_asked_again_as_json() -> None:
    """Elsewhere an empty stream is asked once more as JSON for one token, to learn why; the
    ChatGPT backend refuses such a request, so it is never sent there."""
    async with (
        ScriptedUpstream() as api,
        ChatGPTBackend(Script([Reply(fault=Fault.EMPTY)])) as backend,
        gateway_for(api.url, settings=settings(backend, mode="off")) as gw,
    ):
        status, _, _ = await post(gw, codex_body())
    assert status >= 500
    assert len(model_requests(backend)) == 1 and backend.broken == []
