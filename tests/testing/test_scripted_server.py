"""The scripted upstream's routes, recording, policies and command line."""

from __future__ import annotations

import asyncio
import json
import signal
import sys

import aiohttp
import anthropic
import openai
import pytest

import skillstate.testing
from skillstate.conversation import Wire
from skillstate.testing import (
    Reply,
    Script,
    ScriptedCall,
    ScriptedUpstream,
    ScriptExhausted,
)

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


async def _post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, object]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=headers or {}) as response,
    ):
        return response.status, await response.json()


def test_public_surface_is_pinned() -> None:
    assert sorted(skillstate.testing.__all__) == [
        "Billing",
        "Charge",
        "Fault",
        "Policy",
        "Prices",
        "RecordedRequest",
        "Reply",
        "Script",
        "ScriptExhausted",
        "ScriptedCall",
        "ScriptedError",
        "ScriptedUpstream",
        "Stop",
        "Tokens",
        "default_policy",
        "estimate_tokens",
        "prompt_tokens",
    ]


async def test_models_list_in_each_sdks_shape(
    oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic
) -> None:
    assert [model.id async for model in oai.models.list()] == ["test-model"]
    page = await ant.models.list()
    assert [model.id for model in page.data] == ["test-model"]
    assert (page.first_id, page.last_id, page.has_more) == ("test-model", "test-model", False)
    assert page.data[0].type == "model"


async def test_models_are_configurable() -> None:
    async with (
        ScriptedUpstream(models=["a", "b"]) as up,
        openai.AsyncOpenAI(base_url=up.url + "/v1", api_key="k") as client,
    ):
        assert [model.id async for model in client.models.list()] == ["a", "b"]


async def test_requests_are_recorded_exactly(up: ScriptedUpstream) -> None:
    raw = b'{"model": "m", "max_tokens": 5, "messages": [], "seed": 123456789012345678901}'
    headers = {"X-Api-Key": "sk-ant-test", "anthropic-version": "2023-06-01"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(up.url + "/v1/messages?beta=true", data=raw, headers=headers),
    ):
        pass
    (recorded,) = up.requests
    assert (recorded.index, recorded.method, recorded.path) == (0, "POST", "/v1/messages")
    assert recorded.query == {"beta": "true"}
    assert recorded.headers["x-api-key"] == "sk-ant-test"
    assert recorded.body == raw
    assert recorded.json["seed"] == 123456789012345678901
    assert recorded.wire is Wire.MESSAGES
    assert recorded.model == "m"
    assert recorded.stream is False


async def test_routes_answer_without_the_v1_prefix(up: ScriptedUpstream) -> None:
    up.policy = Script([Reply("bare")])
    status, body = await _post(up.url + "/chat/completions", json.dumps(CHAT).encode())
    assert status == 200
    assert isinstance(body, dict)
    assert body["choices"][0]["message"]["content"] == "bare"
    assert up.requests[0].wire is Wire.CHAT


async def test_unknown_route_is_404_in_the_callers_shape(up: ScriptedUpstream) -> None:
    status, body = await _post(up.url + "/v1/embeddings", b"{}")
    assert status == 404
    assert isinstance(body, dict) and body["error"]["type"] == "invalid_request_error"
    status, body = await _post(up.url + "/v1/nope", b"", {"anthropic-version": "2023-06-01"})
    assert status == 404
    assert isinstance(body, dict) and body["error"]["type"] == "not_found_error"
    assert [r.path for r in up.requests] == ["/v1/embeddings", "/v1/nope"]
    assert all(r.wire is None for r in up.requests)


async def test_malformed_json_is_400_in_the_routes_wire_shape(up: ScriptedUpstream) -> None:
    status, chat = await _post(up.url + "/v1/chat/completions", b'{"model": ')
    assert status == 400
    assert isinstance(chat, dict) and chat["error"]["type"] == "invalid_request_error"
    status, messages = await _post(up.url + "/v1/messages", b"[1, 2]")
    assert status == 400
    assert isinstance(messages, dict) and messages["type"] == "error"
    assert up.requests[0].body == b'{"model": '
    assert up.requests[0].json is None


async def test_missing_required_field_is_400(up: ScriptedUpstream) -> None:
    status, body = await _post(up.url + "/v1/messages", b'{"model": "m", "messages": []}')
    assert status == 400
    assert isinstance(body, dict) and body["error"]["message"] == "max_tokens: Field required"


async def test_script_plays_in_order_then_reports_exhaustion(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    script = Script([Reply("first"), Reply("second")])
    up.policy = script
    first = await oai.chat.completions.create(**CHAT)
    second = await oai.chat.completions.create(**CHAT)
    assert script.remaining == 0
    assert [first.choices[0].message.content, second.choices[0].message.content] == [
        "first",
        "second",
    ]
    with pytest.raises(openai.InternalServerError) as failed:
        await oai.chat.completions.create(**CHAT)
    assert "script exhausted" in failed.value.message
    (error,) = up.errors
    assert isinstance(error, ScriptExhausted)


async def test_default_policy_echoes_the_last_user_text(
    oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic
) -> None:
    chat = await oai.chat.completions.create(
        model="m",
        messages=[
            {"role": "user", "content": "older"},
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": [{"type": "text", "text": "newest"}]},
        ],
    )
    assert chat.choices[0].message.content == "You said: newest"
    responses = await oai.responses.create(
        model="m", input=[{"role": "user", "content": [{"type": "input_text", "text": "resp"}]}]
    )
    assert responses.output_text == "You said: resp"
    message = await ant.messages.create(
        model="m", max_tokens=5, messages=[{"role": "user", "content": "anth"}]
    )
    assert message.content[0].type == "text" and message.content[0].text == "You said: anth"
    tool_only = await ant.messages.create(
        model="m",
        max_tokens=5,
        messages=[
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}],
            }
        ],
    )
    assert tool_only.content[0].type == "text" and tool_only.content[0].text == "ok"


async def test_a_raising_policy_is_a_500_and_is_kept(
    up: ScriptedUpstream, ant: anthropic.AsyncAnthropic
) -> None:
    def broken(request: object) -> Reply:
        raise KeyError("no reply for this")

    up.policy = broken
    with pytest.raises(anthropic.InternalServerError):
        await ant.messages.create(model="m", max_tokens=5, messages=CHAT["messages"])
    assert isinstance(up.errors[0], KeyError)


async def test_same_script_sends_identical_bytes() -> None:
    bodies: list[bytes] = []
    for _ in range(2):
        policy = Script([Reply("same", calls=[ScriptedCall("f", {"a": 1})], reasoning="r")])
        async with ScriptedUpstream(policy) as up:
            body = json.dumps({"model": "m", "input": "hi", "stream": True}).encode()
            async with (
                aiohttp.ClientSession() as session,
                session.post(up.url + "/v1/responses", data=body) as response,
            ):
                bodies.append(await response.read())
    assert bodies[0] == bodies[1]


def test_url_before_start_is_an_error() -> None:
    with pytest.raises(RuntimeError):
        _ = ScriptedUpstream().url


async def test_command_line_serves_until_interrupted() -> None:
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "skillstate.testing.scripted", "--port", "0"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
    url = line.split()[3]
    try:
        status, body = await _post(url + "/v1/chat/completions", json.dumps(CHAT).encode())
        assert status == 200
        assert isinstance(body, dict)
        assert body["choices"][0]["message"]["content"] == "You said: hi"
    finally:
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 30) == 0
    assert await process.stderr.read() == b"", "the command warned or failed"
