"""The official SDKs through the gateway, against a scripted upstream of the same wire and of
each other wire: text, parallel tool calls and their results, streams, usage."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
import pytest

from skillstate.testing import Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script

WIRES = ["auto", "openai-chat", "openai-responses", "anthropic-messages"]
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


@dataclass
class Rig:
    upstream: ScriptedUpstream
    url: str
    clients: list[openai.AsyncOpenAI | anthropic.AsyncAnthropic] = field(default_factory=list)

    def openai(self) -> openai.AsyncOpenAI:
        client = openai.AsyncOpenAI(base_url=self.url + "/v1", api_key="sk-test", max_retries=0)
        self.clients.append(client)
        return client

    def anthropic(self) -> anthropic.AsyncAnthropic:
        client = anthropic.AsyncAnthropic(base_url=self.url, api_key="sk-ant-test", max_retries=0)
        self.clients.append(client)
        return client

    def last_body(self) -> dict[str, Any]:
        body = self.upstream.requests[-1].json
        assert isinstance(body, dict)
        return body


SCRIPT = [
    Reply(
        text="Let me check.",
        calls=[
            ScriptedCall("get_weather", {"city": "Paris"}),
            ScriptedCall("get_weather", {"city": "Oslo"}),
        ],
    ),
    Reply(text="Paris is sunny and Oslo is cold.", input_tokens=120, output_tokens=9),
]


@pytest.fixture(params=WIRES)
async def rig(request: pytest.FixtureRequest) -> AsyncIterator[Rig]:
    async with (
        ScriptedUpstream(Script(SCRIPT)) as up,
        gateway_for(up.url, wire=request.param) as gw,
    ):
        rig = Rig(up, gw.url)
        yield rig
        for client in rig.clients:
            await client.close()


def _results_reached_upstream(body: dict[str, Any], ids: list[str]) -> None:
    """Whatever the upstream wire, both results arrived, each with its call's id."""
    text = json.dumps(body)
    for call_id in ids:
        assert call_id in text
    assert "sunny-Paris" in text and "cold-Oslo" in text


def _chat_tools() -> list[Any]:
    function = {"name": "get_weather", "description": "Weather in a city", "parameters": WEATHER}
    return [{"type": "function", "function": function}]


async def test_chat_completions_tool_round_trip(rig: Rig) -> None:
    client = rig.openai()
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris and Oslo?"}]
    first = await client.chat.completions.create(
        model="test-model", messages=messages, tools=_chat_tools()
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [json.loads(c.function.arguments)["city"] for c in calls] == ["Paris", "Oslo"]  # type: ignore[union-attr]
    messages.append(choice.message.model_dump(exclude_none=True))
    for call, text in zip(calls, ["sunny-Paris", "cold-Oslo"], strict=True):
        messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    second = await client.chat.completions.create(
        model="test-model", messages=messages, tools=_chat_tools()
    )
    assert second.choices[0].message.content == "Paris is sunny and Oslo is cold."
    assert second.usage is not None and second.usage.prompt_tokens == 120
    assert second.usage.completion_tokens == 9
    _results_reached_upstream(rig.last_body(), [c.id for c in calls])


async def test_chat_completions_stream(rig: Rig) -> None:
    client = rig.openai()
    stream = await client.chat.completions.create(
        model="test-model",
        messages=[{"role": "user", "content": "Weather?"}],
        tools=_chat_tools(),
        stream=True,
        stream_options={"include_usage": True},
    )
    text, args, ids, usage, finish = "", {}, {}, None, None
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            text += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                if call.id:
                    ids[call.index] = call.id
                if call.function and call.function.arguments:
                    args[call.index] = args.get(call.index, "") + call.function.arguments
    assert text == "Let me check."
    assert finish == "tool_calls"
    assert [json.loads(args[i])["city"] for i in sorted(args)] == ["Paris", "Oslo"]
    assert len(set(ids.values())) == 2
    assert usage is not None and usage.prompt_tokens > 0


def _responses_tools() -> list[Any]:
    return [{"type": "function", "name": "get_weather", "parameters": WEATHER, "strict": False}]


async def test_responses_create_tool_round_trip(rig: Rig) -> None:
    client = rig.openai()
    first = await client.responses.create(
        model="test-model", input="Weather in Paris and Oslo?", tools=_responses_tools()
    )
    calls = [item for item in first.output if item.type == "function_call"]
    assert [json.loads(c.arguments)["city"] for c in calls] == ["Paris", "Oslo"]
    assert first.output_text == "Let me check."
    follow: list[Any] = [{"role": "user", "content": "Weather in Paris and Oslo?"}]
    follow += [item.model_dump(exclude_none=True) for item in first.output]
    for call, text in zip(calls, ["sunny-Paris", "cold-Oslo"], strict=True):
        follow.append({"type": "function_call_output", "call_id": call.call_id, "output": text})
    second = await client.responses.create(
        model="test-model", input=follow, tools=_responses_tools()
    )
    assert second.output_text == "Paris is sunny and Oslo is cold."
    assert second.usage is not None and second.usage.input_tokens == 120
    _results_reached_upstream(rig.last_body(), [c.call_id for c in calls])


async def test_responses_stream(rig: Rig) -> None:
    client = rig.openai()
    async with client.responses.stream(
        model="test-model", input="Weather?", tools=_responses_tools()
    ) as stream:
        deltas = [
            event.delta async for event in stream if event.type == "response.output_text.delta"
        ]
        final = await stream.get_final_response()
    assert "".join(deltas) == "Let me check."
    calls = [item for item in final.output if item.type == "function_call"]
    assert [json.loads(c.arguments)["city"] for c in calls] == ["Paris", "Oslo"]
    assert final.usage is not None and final.usage.input_tokens > 0


def _anthropic_tools() -> list[Any]:
    return [{"name": "get_weather", "description": "Weather in a city", "input_schema": WEATHER}]


async def test_messages_create_tool_round_trip(rig: Rig) -> None:
    client = rig.anthropic()
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris and Oslo?"}]
    first = await client.messages.create(
        model="test-model", max_tokens=256, messages=messages, tools=_anthropic_tools()
    )
    assert first.stop_reason == "tool_use"
    uses = [block for block in first.content if block.type == "tool_use"]
    assert [u.input["city"] for u in uses] == ["Paris", "Oslo"]  # type: ignore[index]
    messages.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
    results = [
        {"type": "tool_result", "tool_use_id": u.id, "content": text}
        for u, text in zip(uses, ["sunny-Paris", "cold-Oslo"], strict=True)
    ]
    messages.append({"role": "user", "content": results})
    second = await client.messages.create(
        model="test-model", max_tokens=256, messages=messages, tools=_anthropic_tools()
    )
    assert second.content[0].type == "text"
    assert second.content[0].text == "Paris is sunny and Oslo is cold."
    assert second.usage.input_tokens == 120 and second.usage.output_tokens == 9
    _results_reached_upstream(rig.last_body(), [u.id for u in uses])


async def test_messages_stream(rig: Rig) -> None:
    client = rig.anthropic()
    async with client.messages.stream(
        model="test-model",
        max_tokens=256,
        messages=[{"role": "user", "content": "Weather?"}],
        tools=_anthropic_tools(),
    ) as stream:
        text = "".join([chunk async for chunk in stream.text_stream])
        final = await stream.get_final_message()
    assert text == "Let me check."
    uses = [block for block in final.content if block.type == "tool_use"]
    assert [u.input["city"] for u in uses] == ["Paris", "Oslo"]  # type: ignore[index]
    assert final.stop_reason == "tool_use"
    assert final.usage.output_tokens > 0


async def test_count_tokens(rig: Rig) -> None:
    counted = await rig.anthropic().messages.count_tokens(
        model="test-model",
        messages=[{"role": "user", "content": "How many tokens is this sentence?"}],
        tools=_anthropic_tools(),
    )
    assert counted.input_tokens > 0
