"""Stream pacing (hold, chunk_delay) and detection of clients that leave mid-stream."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import anthropic
import openai

from skillstate.testing import Reply, Script, ScriptedUpstream

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
LONG = " ".join(f"word{i}" for i in range(40))


async def test_hold_sends_the_first_chunk_before_the_rest(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    hold = asyncio.Event()
    up.policy = Script([Reply("after the hold", hold=hold)])
    stream = await oai.chat.completions.create(**CHAT, stream=True)
    iterator = aiter(stream)
    first = await asyncio.wait_for(anext(iterator), 5)
    assert first.choices[0].delta.role == "assistant"
    pending = asyncio.ensure_future(anext(iterator))
    await asyncio.sleep(0.1)
    assert not pending.done(), "the stream went on while held"
    hold.set()
    second = await asyncio.wait_for(pending, 5)
    rest = [chunk.choices[0].delta.content or "" async for chunk in iterator]
    assert (second.choices[0].delta.content or "") + "".join(rest) == "after the hold"
    assert up.cancelled == 0
    assert not up.disconnected.is_set()


async def test_hold_after_sends_that_many_chunks_before_the_rest(
    up: ScriptedUpstream, oai: openai.AsyncOpenAI
) -> None:
    hold = asyncio.Event()
    up.policy = Script([Reply(LONG, hold=hold, hold_after=3)])
    stream = await oai.chat.completions.create(**CHAT, stream=True)
    iterator = aiter(stream)
    first = [await asyncio.wait_for(anext(iterator), 5) for _ in range(3)]
    pending = asyncio.ensure_future(anext(iterator))
    await asyncio.sleep(0.1)
    assert not pending.done(), "the stream went on while held"
    hold.set()
    rest = [await asyncio.wait_for(pending, 5)] + [chunk async for chunk in iterator]
    said = "".join(chunk.choices[0].delta.content or "" for chunk in first + rest if chunk.choices)
    assert said == LONG and "".join(c.choices[0].delta.content or "" for c in first[1:])


async def test_hold_delays_a_non_streaming_answer(
    up: ScriptedUpstream, ant: anthropic.AsyncAnthropic
) -> None:
    hold = asyncio.Event()
    up.policy = Script([Reply("late", hold=hold)])
    call = asyncio.ensure_future(
        ant.messages.create(model="m", max_tokens=5, messages=CHAT["messages"])
    )
    await asyncio.sleep(0.1)
    assert not call.done()
    assert len(up.requests) == 1, "the request is recorded before the answer"
    hold.set()
    message = await asyncio.wait_for(call, 5)
    assert message.content[0].type == "text" and message.content[0].text == "late"


async def test_chunk_delay_paces_the_events(up: ScriptedUpstream) -> None:
    up.policy = Script([Reply("one two three four", chunk_delay=0.03)])
    body = {"model": "m", "input": "x", "stream": True}
    arrivals: list[float] = []
    async with (
        aiohttp.ClientSession() as session,
        session.post(up.url + "/v1/responses", json=body) as response,
    ):
        async for _ in response.content.iter_any():
            arrivals.append(time.monotonic())
    assert arrivals[-1] - arrivals[0] >= 0.03 * 10, "events of one stream arrived together"


async def _read_first_chunk_and_leave(url: str, path: str, body: dict[str, object]) -> bytes:
    async with aiohttp.ClientSession() as session:
        response = await session.post(url + path, json=body)
        first = await response.content.readany()
        response.close()
    return first


async def test_client_leaving_a_held_stream_is_counted(up: ScriptedUpstream) -> None:
    hold = asyncio.Event()
    up.policy = Script([Reply(LONG, hold=hold)])
    body = {"model": "m", "max_tokens": 5, "messages": CHAT["messages"], "stream": True}
    first = await _read_first_chunk_and_leave(up.url, "/v1/messages", body)
    assert first.startswith(b"event: message_start\n")
    await asyncio.wait_for(up.disconnected.wait(), 5)
    assert up.cancelled == 1


async def test_client_leaving_a_paced_stream_is_counted(up: ScriptedUpstream) -> None:
    up.policy = Script([Reply(LONG, chunk_delay=0.02)])
    first = await _read_first_chunk_and_leave(
        up.url, "/v1/chat/completions", {**CHAT, "stream": True}
    )
    assert json.loads(first.split(b"\n")[0].removeprefix(b"data: "))["object"] == (
        "chat.completion.chunk"
    )
    await asyncio.wait_for(up.disconnected.wait(), 5)
    assert up.cancelled == 1


async def test_a_stream_read_to_the_end_is_not_counted(up: ScriptedUpstream) -> None:
    up.policy = Script([Reply(LONG)])
    async with (
        aiohttp.ClientSession() as session,
        session.post(up.url + "/v1/chat/completions", json={**CHAT, "stream": True}) as response,
    ):
        raw = await response.read()
    assert raw.endswith(b"data: [DONE]\n\n")
    assert raw.count(b"\n\n") > 40
    assert up.cancelled == 0
    assert not up.disconnected.is_set()
