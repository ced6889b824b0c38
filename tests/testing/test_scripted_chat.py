"""The scripted upstream on the OpenAI Chat Completions wire, driven by the official SDK."""

from __future__ import annotations

import json
import math

import aiohttp
import openai
import pytest

from skillstate.testing import Reply, Script, ScriptedCall, ScriptedUpstream, Stop

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
WEATHER = ScriptedCall("get_weather", {"city": "Paris", "unit": "celsius"})


def _estimate(text: str) -> int:
    return math.ceil(len(text.encode()) / 4)


async def test_create_answers_text_with_counted_usage(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    up.policy = Script([Reply("Sunny and mild today.")])
    completion = await oai.chat.completions.create(model="gpt-test", messages=MESSAGES)
    choice = completion.choices[0]
    assert choice.message.content == "Sunny and mild today."
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert completion.model == "gpt-test"
    assert completion.id.startswith("chatcmpl-")
    prompt = json.dumps({"messages": MESSAGES}, separators=(",", ":"))
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == _estimate(prompt)
    assert completion.usage.completion_tokens == _estimate("Sunny and mild today.")
    assert completion.usage.total_tokens == _estimate(prompt) + _estimate("Sunny and mild today.")


async def test_create_answers_tool_calls(up: ScriptedUpstream, oai: openai.AsyncOpenAI) -> None:
    given = ScriptedCall("lookup", {"q": "x"}, id="call_given")
    up.policy = Script([Reply(calls=[WEATHER, given])])
    completion = await oai.chat.completions.create(model="m", messages=MESSAGES)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = choice.message.tool_calls or []
    assert [call.type for call in calls] == ["function", "function"]
    first, second = calls
    assert first.id.startswith("call_") and len(first.id) == len("call_") + 24
    assert first.function.name == "get_weather"
    assert json.loads(first.function.arguments) == WEATHER.arguments
    assert second.id == "call_given"


async def test_create_reports_overridden_usage_and_reasoning(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    up.policy = Script(
        [
            Reply(
                "ok",
                reasoning="thinking it over",
                input_tokens=1000,
                cached_tokens=800,
                output_tokens=50,
                stop="max_tokens",
            )
        ]
    )
    completion = await oai.chat.completions.create(model="m", messages=MESSAGES)
    assert completion.choices[0].finish_reason == "length"
    assert completion.choices[0].message.model_extra == {"reasoning_content": "thinking it over"}
    usage = completion.usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens) == (1000, 50)
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 800
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == _estimate("thinking it over")


async def test_stream_sends_word_deltas_tool_calls_and_usage_chunk(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    text = "It is sunny in Paris with a light breeze."
    up.policy = Script([Reply(text, calls=[WEATHER])])
    chunks = [
        chunk
        async for chunk in await oai.chat.completions.create(
            model="m",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
    ]
    contents = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(contents) == len(text.split())
    assert "".join(contents) == text
    assert chunks[0].choices[0].delta.role == "assistant"
    calls = [call for c in chunks if c.choices for call in (c.choices[0].delta.tool_calls or [])]
    assert calls[0].id is not None and calls[0].function is not None
    assert calls[0].function.name == "get_weather"
    assert len(calls) > 2, "arguments should arrive in several fragments"
    arguments = "".join(call.function.arguments or "" for call in calls if call.function)
    assert json.loads(arguments) == WEATHER.arguments
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "tool_calls"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])


async def test_stream_helper_accumulates_the_final_completion(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    up.policy = Script([Reply("Calling two tools.", calls=[WEATHER, ScriptedCall("noop")])])
    async with oai.chat.completions.stream(model="m", messages=MESSAGES) as stream:
        final = await stream.get_final_completion()
    message = final.choices[0].message
    assert message.content == "Calling two tools."
    assert [call.function.name for call in message.tool_calls or []] == ["get_weather", "noop"]
    assert json.loads((message.tool_calls or [])[1].function.arguments) == {}


async def test_raw_stream_ends_with_done_and_omits_usage_unless_asked(up: ScriptedUpstream) -> None:
    up.policy = Script([Reply("two words")])
    body = {"model": "m", "messages": MESSAGES, "stream": True}
    async with (
        aiohttp.ClientSession() as session,
        session.post(up.url + "/v1/chat/completions", json=body) as response,
    ):
        assert response.headers["Content-Type"].startswith("text/event-stream")
        raw = (await response.read()).decode()
    events = [block for block in raw.split("\n\n") if block]
    assert events[-1] == "data: [DONE]"
    datas = [json.loads(event.removeprefix("data: ")) for event in events[:-1]]
    assert all(data["object"] == "chat.completion.chunk" for data in datas)
    assert all("usage" not in data for data in datas)
    assert not any(line.startswith("event:") for line in raw.splitlines())


async def test_failure_is_raised_by_the_sdk_as_its_error(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    up.policy = Script([Reply.failure(400, "messages: too long"), Reply.failure(429, "slow down")])
    with pytest.raises(openai.BadRequestError) as bad:
        await oai.chat.completions.create(model="m", messages=MESSAGES)
    assert bad.value.status_code == 400
    assert bad.value.body == {
        "message": "messages: too long",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    with pytest.raises(openai.RateLimitError) as limited:
        await oai.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert "slow down" in limited.value.message


async def test_mid_stream_failure_sends_text_then_an_error_event(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    up.policy = Script([Reply.failure(500, "upstream fell over", mid_stream=True, text="Half an")])
    received: list[str] = []
    stream = await oai.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    with pytest.raises(openai.APIError) as failed:
        async for chunk in stream:
            received.append(chunk.choices[0].delta.content or "")
    assert "".join(received) == "Half an"
    assert failed.value.message == "upstream fell over"


@pytest.mark.parametrize(
    ("stop", "finish"),
    [("end_turn", "stop"), ("stop_sequence", "stop"), ("refusal", "content_filter")],
)
async def test_stop_reasons_map_to_finish_reasons(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI, stop: Stop, finish: str
) -> None:
    up.policy = Script([Reply("x", stop=stop)])
    completion = await oai.chat.completions.create(model="m", messages=MESSAGES)
    assert completion.choices[0].finish_reason == finish
