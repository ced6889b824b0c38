"""The scripted upstream on the OpenAI Responses wire, driven by the official SDK."""

from __future__ import annotations

import json

import aiohttp
import openai
import pytest

from skillstate.testing import Reply, Script, ScriptedCall, ScriptedUpstream

TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        "strict": False,
    }
]
WEATHER = ScriptedCall("get_weather", {"city": "Paris"})


async def test_create_echoes_the_request_and_answers_text(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    up.policy = Script([Reply("Hello from the fake.")])
    response = await oai.responses.create(
        model="gpt-echo",
        instructions="Be brief.",
        input="hi",
        tools=TOOLS,
        tool_choice="auto",
        max_output_tokens=64,
        temperature=0.2,
        metadata={"k": "v"},
    )
    assert response.output_text == "Hello from the fake."
    assert response.status == "completed"
    assert response.id.startswith("resp_")
    assert (response.model, response.instructions) == ("gpt-echo", "Be brief.")
    assert (response.max_output_tokens, response.temperature) == (64, 0.2)
    assert response.metadata == {"k": "v"}
    assert [tool.to_dict() for tool in response.tools] == TOOLS
    assert response.usage is not None
    assert response.usage.output_tokens > 0
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens


async def test_create_answers_function_calls_with_item_and_call_ids(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    up.policy = Script([Reply(calls=[WEATHER, ScriptedCall("noop", id="call_mine")])])
    response = await oai.responses.create(model="m", input="weather?", tools=TOOLS)
    calls = [item for item in response.output if item.type == "function_call"]
    assert [item.type for item in response.output] == ["function_call", "function_call"]
    first, second = calls
    assert first.id is not None and first.id.startswith("fc_")
    assert first.call_id.startswith("call_")
    assert json.loads(first.arguments) == {"city": "Paris"}
    assert second.call_id == "call_mine"


async def test_reasoning_item_carries_encrypted_content_when_included(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    up.policy = Script([Reply("done", reasoning="step by step"), Reply("done", reasoning="again")])
    plain = await oai.responses.create(model="m", input="x")
    included = await oai.responses.create(
        model="m", input="x", include=["reasoning.encrypted_content"], reasoning={"effort": "low"}
    )
    assert plain.output[0].type == "reasoning"
    assert plain.output[0].summary[0].text == "step by step"
    assert plain.output[0].encrypted_content is None
    assert included.output[0].type == "reasoning"
    assert included.output[0].encrypted_content
    assert included.reasoning is not None and included.reasoning.effort == "low"


async def test_stream_sends_every_event_in_order_with_sequence_numbers(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    text = "Checking the weather now."
    up.policy = Script([Reply(text, calls=[WEATHER])])
    async with oai.responses.stream(model="m", input="weather?", tools=TOOLS) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    types = [event.type for event in events]
    text_deltas = ["response.output_text.delta"] * len(text.split())
    arg_deltas = [e for e in types if e == "response.function_call_arguments.delta"]
    assert arg_deltas
    assert types == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *text_deltas,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        *arg_deltas,
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert final.output_text == text
    call = final.output[1]
    assert call.type == "function_call"
    assert json.loads(call.arguments) == {"city": "Paris"}
    assert final.model == "m"


async def test_raw_stream_names_each_event_with_its_type(up: ScriptedUpstream) -> None:
    up.policy = Script([Reply("a b c", reasoning="hmm")])
    body = {"model": "m", "input": "x", "stream": True}
    async with (
        aiohttp.ClientSession() as session,
        session.post(up.url + "/v1/responses", json=body) as response,
    ):
        raw = (await response.read()).decode()
    blocks = [block.split("\n") for block in raw.split("\n\n") if block]
    assert all(len(block) == 2 for block in blocks)
    for event_line, data_line in blocks:
        data = json.loads(data_line.removeprefix("data: "))
        assert event_line == "event: " + data["type"]
    names = [block[0].removeprefix("event: ") for block in blocks]
    assert "response.reasoning_summary_text.delta" in names
    assert names.index("response.reasoning_summary_part.done") < names.index(
        "response.content_part.added"
    )


async def test_max_tokens_stop_makes_the_response_incomplete(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    up.policy = Script([Reply("cut", stop="max_tokens"), Reply("cut", stop="max_tokens")])
    response = await oai.responses.create(model="m", input="x")
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    stream = await oai.responses.create(model="m", input="x", stream=True)
    events = [event async for event in stream]
    assert events[-1].type == "response.incomplete"


async def test_failures_are_raised_by_the_sdk(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    up.policy = Script(
        [Reply.failure(401, "bad key"), Reply.failure(503, "busy", mid_stream=True, text="So far")]
    )
    with pytest.raises(openai.AuthenticationError) as denied:
        await oai.responses.create(model="m", input="x")
    assert denied.value.body == {
        "message": "bad key",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
    stream = await oai.responses.create(model="m", input="x", stream=True)
    events = [event async for event in stream]
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "So far"
    assert events[-1].type == "error"
    assert events[-1].message == "busy"
