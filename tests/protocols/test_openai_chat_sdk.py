"""The official openai SDK reads what this adapter writes, over a real loopback server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import openai
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
    Response,
    Start,
    StopReason,
    Text,
    ToolCall,
    Usage,
    Wire,
)
from skillstate.protocols.openai_chat import (
    decode_request,
    encode_response,
    error_body,
    stream_encoder,
)
from skillstate.support.jsonio import dumps, loads


@dataclass
class Upstream:
    """What the loopback server answers: a JSON body, or SSE bytes made from events by the
    stream encoder (given the request the SDK actually sent, as the gateway would)."""

    status: int = 200
    body: Any = None
    events: list[Event] = field(default_factory=list)
    seen: list[Any] = field(default_factory=list)


async def _serve(upstream: Upstream, request: web.Request) -> web.StreamResponse:
    sent = loads(await request.read())
    upstream.seen.append(sent)
    if not upstream.events:
        return web.Response(
            status=upstream.status, body=dumps(upstream.body), content_type="application/json"
        )
    reply = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await reply.prepare(request)
    encoder = stream_encoder(decode_request(sent))
    for event in upstream.events:
        await reply.write(encoder.encode(event))  # one write per event, as a relay does
    await reply.write(encoder.close())
    await reply.write_eof()
    return reply


@pytest.fixture
async def served() -> AsyncIterator[tuple[Upstream, openai.AsyncOpenAI]]:
    upstream = Upstream()
    app = web.Application()

    async def handler(request: web.Request) -> web.StreamResponse:
        return await _serve(upstream, request)

    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    client = openai.AsyncOpenAI(
        base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test", max_retries=0
    )
    try:
        yield upstream, client
    finally:
        await client.close()
        await runner.cleanup()


TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
TURN: list[Event] = [
    Start("msg_1", "claude-sonnet", Wire.MESSAGES, usage=Usage(input=30, cached_input=20)),
    PartStart(0, Text("")),
    Delta(0, "Reading "),
    Delta(0, "both."),
    PartEnd(0),
    PartStart(1, ToolCall("toolu_a", "read", "")),
    PartStart(2, ToolCall("toolu_b", "read", "")),
    Delta(1, '{"path"'),
    Delta(2, '{"path":"b.py"}'),
    Delta(1, ':"a.py"}'),
    PartEnd(1),
    PartEnd(2),
    Finish(StopReason.TOOL_CALLS, Usage(output=12)),
]
Served = tuple[Upstream, openai.AsyncOpenAI]


async def test_create_stream_accumulates(served: Served) -> None:
    upstream, client = served
    upstream.events = TURN
    stream = await client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "read a.py and b.py"}],
        tools=TOOLS,
        stream=True,
        stream_options={"include_usage": True},
    )
    text, reasons, usage = "", [], None
    args: dict[int, str] = {}
    ids: dict[int, str | None] = {}
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                ids.setdefault(call.index, call.id)
                if call.function is not None:
                    args[call.index] = args.get(call.index, "") + (call.function.arguments or "")
            if choice.finish_reason:
                reasons.append(choice.finish_reason)
    assert text == "Reading both."
    assert ids == {0: "toolu_a", 1: "toolu_b"}
    assert args == {0: '{"path":"a.py"}', 1: '{"path":"b.py"}'}
    assert reasons == ["tool_calls"]
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (30, 12)


async def test_stream_helper_final_completion(served: Served) -> None:
    upstream, client = served
    upstream.events = TURN
    async with client.chat.completions.stream(
        model="m",
        messages=[{"role": "user", "content": "read"}],
        tools=TOOLS,
        stream_options={"include_usage": True},
    ) as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_completion()
    assert "content.done" in kinds and "tool_calls.function.arguments.done" in kinds
    message = final.choices[0].message
    assert message.content == "Reading both."
    calls = message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("toolu_a", "read", '{"path":"a.py"}'),
        ("toolu_b", "read", '{"path":"b.py"}'),
    ]
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.usage is not None and final.usage.total_tokens == 42
    assert final.usage.prompt_tokens_details is not None
    assert final.usage.prompt_tokens_details.cached_tokens == 20


async def test_stream_without_usage_request(served: Served) -> None:
    upstream, client = served
    upstream.events = TURN
    async with client.chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "read"}]
    ) as stream:
        final = await stream.get_final_completion()
    assert upstream.seen[0]["stream"] is True and "stream_options" not in upstream.seen[0]
    assert final.usage is None
    assert final.choices[0].message.content == "Reading both."


async def test_a_failure_mid_stream_raises(served: Served) -> None:
    upstream, client = served
    upstream.events = [
        Start("r", "m"),
        PartStart(0, Text("")),
        Delta(0, "par"),
        Failure("Overloaded", ErrorKind.OVERLOADED, 529),
    ]
    stream = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    with pytest.raises(openai.APIError) as caught:
        async for _ in stream:
            pass
    assert caught.value.message == "Overloaded"


async def test_a_response_of_another_wire(served: Served) -> None:
    upstream, client = served
    upstream.body = encode_response(
        Response(
            "msg_9",
            "claude",
            Message("assistant", [Text("Done."), ToolCall("toolu_1", "read", "{}")]),
            Wire.MESSAGES,
            StopReason.TOOL_CALLS,
            Usage(input=5, output=3),
        ),
        None,
    )
    completion = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content == "Done."
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage is not None and completion.usage.total_tokens == 8


ERRORS: list[tuple[int, str, Callable[..., Any]]] = [
    (400, "invalid_request_error", openai.BadRequestError),
    (401, "authentication_error", openai.AuthenticationError),
    (403, "permission_error", openai.PermissionDeniedError),
    (404, "not_found_error", openai.NotFoundError),
    (413, "request_too_large", openai.APIStatusError),
    (429, "rate_limit_error", openai.RateLimitError),
    (500, "api_error", openai.InternalServerError),
    (529, "overloaded_error", openai.InternalServerError),
]


@pytest.mark.parametrize(("status", "kind", "exception"), ERRORS)
async def test_error_bodies(served: Served, status: int, kind: str, exception: Any) -> None:
    upstream, client = served
    upstream.status, upstream.body = status, error_body(status, kind, f"{kind} happened")
    with pytest.raises(exception) as caught:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    error = caught.value
    assert error.status_code == status
    assert error.message == f"Error code: {status} - {kind} happened"
    assert (error.type, error.code) == (
        upstream.body["error"]["type"],
        upstream.body["error"]["code"],
    )
