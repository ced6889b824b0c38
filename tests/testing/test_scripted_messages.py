"""The scripted upstream on the Anthropic Messages wire, driven by the official SDK."""

from __future__ import annotations

import json

import aiohttp
import anthropic
import pytest

from skillstate.testing import Reply, Script, ScriptedCall, ScriptedUpstream

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
SYSTEM = [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]
WEATHER = ScriptedCall("get_weather", {"city": "Paris", "days": [1, 2]})


async def test_create_answers_text_and_tool_use(
    up: ScriptedUpstream, ant: anthropic.AsyncAnthropic
) -> None:
    up.policy = Script([Reply("Let me check.", calls=[WEATHER], reasoning="Needs a tool.")])
    message = await ant.messages.create(
        model="claude-test", max_tokens=100, system=SYSTEM, messages=MESSAGES
    )
    assert message.model == "claude-test"
    assert message.id.startswith("msg_01")
    assert message.stop_reason == "tool_use"
    thinking, text, tool = message.content
    assert thinking.type == "thinking" and thinking.thinking == "Needs a tool."
    assert thinking.signature
    assert text.type == "text" and text.text == "Let me check."
    assert tool.type == "tool_use"
    assert tool.id.startswith("toolu_01")
    assert (tool.name, tool.input) == ("get_weather", WEATHER.arguments)


async def test_usage_matches_count_tokens_and_splits_out_the_cache(
    up: ScriptedUpstream, ant: anthropic.AsyncAnthropic
) -> None:
    counted = await ant.messages.count_tokens(model="m", system=SYSTEM, messages=MESSAGES)
    up.policy = Script([Reply("a"), Reply("b", cached_tokens=3, cache_write_tokens=2)])
    plain = await ant.messages.create(model="m", max_tokens=9, system=SYSTEM, messages=MESSAGES)
    cached = await ant.messages.create(model="m", max_tokens=9, system=SYSTEM, messages=MESSAGES)
    assert counted.input_tokens > 0
    assert plain.usage.input_tokens == counted.input_tokens
    assert plain.usage.cache_read_input_tokens == 0
    assert cached.usage.input_tokens == counted.input_tokens - 5
    assert cached.usage.cache_read_input_tokens == 3
    assert cached.usage.cache_creation_input_tokens == 2


async def test_stream_final_message_has_parsed_tool_input_and_thinking(
    up: ScriptedUpstream, ant: anthropic.AsyncAnthropic
) -> None:
    text = "Checking the forecast for you."
    up.policy = Script([Reply(text, calls=[WEATHER], reasoning="The user wants weather.")])
    async with ant.messages.stream(model="m", max_tokens=100, messages=MESSAGES) as stream:
        deltas = [event.text async for event in stream if event.type == "text"]
        final = await stream.get_final_message()
    assert len(deltas) == len(text.split())
    assert "".join(deltas) == text
    thinking, answer, tool = final.content
    assert thinking.type == "thinking"
    assert thinking.thinking == "The user wants weather."
    assert thinking.signature
    assert answer.type == "text" and answer.text == text
    assert tool.type == "tool_use" and tool.input == WEATHER.arguments
    assert final.stop_reason == "tool_use"
    assert final.usage.output_tokens > 1


async def test_raw_stream_event_order(up: ScriptedUpstream) -> None:
    up.policy = Script([Reply("one two", calls=[WEATHER])])
    body = {"model": "m", "max_tokens": 5, "messages": MESSAGES, "stream": True}
    async with (
        aiohttp.ClientSession() as session,
        session.post(up.url + "/v1/messages", json=body) as response,
    ):
        raw = (await response.read()).decode()
    blocks = [block.split("\n") for block in raw.split("\n\n") if block]
    datas = [json.loads(block[1].removeprefix("data: ")) for block in blocks]
    assert [block[0] for block in blocks] == ["event: " + data["type"] for data in datas]
    shape = [
        (
            data["type"],
            data.get("delta", {}).get("type") or data.get("content_block", {}).get("type"),
        )
        for data in datas
    ]
    json_deltas = [item for item in shape if item == ("content_block_delta", "input_json_delta")]
    assert shape == [
        ("message_start", None),
        ("content_block_start", "text"),
        ("ping", None),
        ("content_block_delta", "text_delta"),
        ("content_block_delta", "text_delta"),
        ("content_block_stop", None),
        ("content_block_start", "tool_use"),
        *json_deltas,
        ("content_block_stop", None),
        ("message_delta", None),
        ("message_stop", None),
    ]
    assert datas[6]["content_block"]["input"] == {}
    assert datas[-2]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert datas[0]["message"]["stop_reason"] is None


async def test_stop_sequence_names_the_requested_sequence(
    up: ScriptedUpstream, ant: anthropic.AsyncAnthropic
) -> None:
    up.policy = Script([Reply("up to", stop="stop_sequence")])
    message = await ant.messages.create(
        model="m", max_tokens=5, messages=MESSAGES, stop_sequences=["END", "STOP"]
    )
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "END")


async def test_failures_are_raised_by_the_sdk(
    up: ScriptedUpstream, ant: anthropic.AsyncAnthropic
) -> None:
    up.policy = Script(
        [
            Reply.failure(529, "Overloaded"),
            Reply.failure(429, "too fast", headers={"retry-after": "7"}),
            Reply.failure(500, "broke mid-way", mid_stream=True, text="Partial"),
        ]
    )
    with pytest.raises(anthropic.OverloadedError) as overloaded:
        await ant.messages.create(model="m", max_tokens=5, messages=MESSAGES)
    assert isinstance(overloaded.value.body, dict)
    assert overloaded.value.body["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert overloaded.value.body["request_id"].startswith("req_")
    with pytest.raises(anthropic.RateLimitError) as limited:
        await ant.messages.create(model="m", max_tokens=5, messages=MESSAGES)
    assert limited.value.response.headers["retry-after"] == "7"
    texts: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as broke:
        async with ant.messages.stream(model="m", max_tokens=5, messages=MESSAGES) as stream:
            async for event in stream:
                if event.type == "text":
                    texts.append(event.text)
    assert texts == ["Partial"]
    assert "broke mid-way" in broke.value.message
    assert isinstance(broke.value.body, dict)
    assert broke.value.body["error"]["type"] == "api_error"
