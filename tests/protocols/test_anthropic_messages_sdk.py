"""The official anthropic SDK as the judge: a loopback server answers it with what this adapter
encodes (streams built from another wire's events, response and error bodies), and reads the
bodies the SDK sends with this adapter's decoder."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anthropic
import pytest
from aiohttp import web

from skillstate.conversation import (
    Delta,
    ErrorKind,
    Event,
    Failure,
    Finish,
    Message,
    PartEnd,
    PartStart,
    Reasoning,
    Response,
    Start,
    StopReason,
    Text,
    ToolCall,
    Usage,
    Wire,
)
from skillstate.protocols.anthropic_messages import (
    decode_request,
    encode_request,
    encode_response,
    error_body,
    stream_encoder,
)
from skillstate.support.jsonio import dumps

Handler = Callable[[web.Request], Any]
USAGE = Usage(input=1200, output=42, cached_input=1000, cache_write=150)
ASK: dict[str, Any] = {
    "model": "test-model",
    "max_tokens": 256,
    "messages": [{"role": "user", "content": "weather in Paris?"}],
}


@asynccontextmanager
async def _client(handler: Handler, received: list[Any]) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async def record(request: web.Request) -> web.StreamResponse:
        received.append((request.path, await request.json()))
        return await handler(request)

    app = web.Application()
    app.router.add_post("/v1/messages", record)
    app.router.add_post("/v1/messages/count_tokens", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with anthropic.AsyncAnthropic(
            base_url=f"http://127.0.0.1:{port}", api_key="sk-ant-test", max_retries=0
        ) as client:
            yield client
    finally:
        await runner.cleanup()


def _stream(events: list[Event]) -> Handler:
    """Serves the encoder's bytes in small pieces, as a relay would."""

    async def handle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        encoder = stream_encoder(decode_request(await request.json()))
        raw = b"".join(encoder.encode(event) for event in events) + encoder.close()
        for i in range(0, len(raw), 50):
            await response.write(raw[i : i + 50])
        await response.write_eof()
        return response

    return handle


def _json(body: dict[str, Any], status: int = 200) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        return web.Response(body=dumps(body), status=status, content_type="application/json")

    return handle


def _chat_turn() -> list[Event]:
    """A turn as the Chat wire's decoder reports it: usage after the stop reason."""
    return [
        Start("chatcmpl-7", "gpt-x", Wire.CHAT),
        PartStart(0, Reasoning()),
        Delta(0, "Check the "),
        Delta(0, "weather."),
        Delta(0, signature="enc-"),
        Delta(0, signature="123"),
        PartEnd(0),
        PartStart(1, Text("")),
        Delta(1, "Looking "),
        Delta(1, "it up."),
        PartStart(2, ToolCall("call_9", "get_weather", "")),
        Delta(2, '{"city"'),
        Delta(2, ': "Paris", "days": [1, 2]}'),
        PartStart(3, ToolCall("call_10", "apply_patch", "*** Begin\n", kind="custom")),
        Delta(3, 'say "hi"\n'),
        PartEnd(1),
        PartEnd(2),
        PartEnd(3),
        Finish(StopReason.TOOL_CALLS),
        Finish(None, USAGE),
    ]


def _check_final(message: Any) -> None:
    thinking, text, call, custom = message.content
    assert (thinking.type, thinking.thinking, thinking.signature) == (
        "thinking",
        "Check the weather.",
        "enc-123",
    )
    assert (text.type, text.text) == ("text", "Looking it up.")
    assert (call.id, call.name, call.input) == (
        "call_9",
        "get_weather",
        {"city": "Paris", "days": [1, 2]},
    )
    assert (custom.name, custom.input) == ("apply_patch", {"input": '*** Begin\nsay "hi"\n'})
    assert message.stop_reason == "tool_use"
    assert message.usage.input_tokens == 50
    assert message.usage.cache_read_input_tokens == 1000
    assert message.usage.cache_creation_input_tokens == 150
    assert message.usage.output_tokens == 42


async def test_the_sdk_stream_helper_accumulates_a_translated_stream() -> None:
    received: list[Any] = []
    async with (
        _client(_stream(_chat_turn()), received) as client,
        client.messages.stream(**ASK) as stream,
    ):
        texts = [text async for text in stream.text_stream]
        message = await stream.get_final_message()
    assert "".join(texts) == "Looking it up."
    assert message.id == "chatcmpl-7" and message.model == "gpt-x"
    _check_final(message)


async def test_the_sdk_raw_stream_reads_the_exact_event_sequence() -> None:
    received: list[Any] = []
    async with _client(_stream(_chat_turn()), received) as client:
        stream = await client.messages.create(**ASK, stream=True)
        events = [event async for event in stream]
    types = [event.type for event in events]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    starts = [e for e in events if e.type == "content_block_start"]
    assert [(e.index, e.content_block.type) for e in starts] == [
        (0, "thinking"),
        (1, "text"),
        (2, "tool_use"),
        (3, "tool_use"),
    ]
    assert [e.content_block.input for e in starts[2:]] == [{}, {}]
    thinking = [e.delta.type for e in events if e.type == "content_block_delta" and e.index == 0]
    assert thinking == ["thinking_delta", "thinking_delta", "signature_delta"]


async def test_the_sdk_reads_a_translated_response_body() -> None:
    parts = [Text("Sunny."), ToolCall("call_1", "get_weather", '{"city":"Paris"}')]
    resp = Response(
        "resp_1",
        "gpt-x",
        Message("assistant", list(parts)),
        Wire.RESPONSES,
        StopReason.TOOL_CALLS,
        USAGE,
    )
    received: list[Any] = []
    async with _client(_json(encode_response(resp, None)), received) as client:
        message = await client.messages.create(**ASK)
    assert message.content[0].type == "text" and message.content[0].text == "Sunny."
    assert message.content[1].input == {"city": "Paris"}
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens) == (50, 1000)


@pytest.mark.parametrize(
    ("status", "kind", "error"),
    [
        (400, "invalid_request_error", anthropic.BadRequestError),
        (401, "authentication_error", anthropic.AuthenticationError),
        (404, "not_found_error", anthropic.NotFoundError),
        (429, "rate_limit_error", anthropic.RateLimitError),
        (529, "overloaded_error", anthropic.APIStatusError),
    ],
)
async def test_the_sdk_reads_error_bodies(status: int, kind: str, error: type[Exception]) -> None:
    received: list[Any] = []
    async with _client(_json(error_body(status, kind, "nope"), status), received) as client:
        with pytest.raises(error) as caught:
            await client.messages.create(**ASK)
    assert caught.value.body == {"type": "error", "error": {"type": kind, "message": "nope"}}  # type: ignore[attr-defined]


async def test_a_mid_stream_failure_reaches_the_sdk_as_an_error() -> None:
    events: list[Event] = [
        Start("r", "m", Wire.CHAT),
        Failure("Overloaded", ErrorKind.OVERLOADED, 529),
    ]
    received: list[Any] = []
    async with _client(_stream(events), received) as client:
        with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
            async with client.messages.stream(**ASK) as stream:
                await stream.get_final_message()


async def test_bodies_the_sdk_sends_decode_and_re_encode_exactly() -> None:
    tools = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {}}}]
    received: list[Any] = []
    handler = _json({"input_tokens": 12})
    async with _client(handler, received) as client:
        await client.messages.count_tokens(
            model="test-model", messages=ASK["messages"], tools=tools
        )  # type: ignore[arg-type]
    system = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    async with (
        _client(_stream(_chat_turn()), received) as client,
        client.messages.stream(**ASK, system=system) as stream,  # type: ignore[arg-type]
    ):
        await stream.get_final_message()
    (count_path, count_body), (path, body) = received
    assert (count_path, path) == ("/v1/messages/count_tokens", "/v1/messages")
    assert "max_tokens" not in count_body and body["stream"] is True
    for sent in (count_body, body):
        assert encode_request(decode_request(copy.deepcopy(sent))) == sent
