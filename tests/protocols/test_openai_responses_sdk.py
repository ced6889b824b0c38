"""The real openai SDK against our encoder's bytes, served from a loopback aiohttp server:
``responses.create(stream=True)``, ``responses.stream(...).get_final_response()`` and a plain
``responses.create``, with canonical events from another wire and from this one."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from openai_responses_shapes import fixture

from skillstate.conversation import (
    Accumulator,
    Delta,
    Event,
    Finish,
    PartEnd,
    PartStart,
    Reasoning,
    Request,
    Response,
    Start,
    StopReason,
    Text,
    ToolCall,
    Usage,
    Wire,
)
from skillstate.protocols.openai_responses import (
    decode_request,
    encode_response,
    stream_decoder,
    stream_encoder,
)
from skillstate.protocols.sse import SSEDecoder, encode_event
from skillstate.support import jsonio

Script = Callable[[Request], list[Event]]
PATCH = "*** Begin Patch\n*** Update File: a.py\n*** End Patch\n"
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "exec_command",
        "description": "Run.",
        "strict": False,
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    },
    {"type": "custom", "name": "apply_patch", "description": "Edit files."},
]


def foreign_turn(_: Request) -> list[Event]:
    """A turn as the Anthropic decoder would give it: thinking with a signature, text, a call
    and a call to a tool the client declared freeform (arguments as {"input": ...})."""
    patch = jsonio.dumps_str({"input": PATCH})
    return [
        Start("msg_01Abc", "claude-sonnet", source=Wire.MESSAGES, created=1767225600),
        PartStart(0, Reasoning("")),
        Delta(0, text="Let me "),
        Delta(0, text="look."),
        Delta(0, signature="EqQBCkYIBxgCKkA"),
        PartEnd(0),
        PartStart(1, Text("")),
        Delta(1, text="Running "),
        Delta(1, text="ls."),
        PartEnd(1),
        PartStart(2, ToolCall("toolu_1", "exec_command", "")),
        Delta(2, text='{"cmd":'),
        Delta(2, text='"ls"}'),
        PartEnd(2),
        PartStart(3, ToolCall("toolu_2", "apply_patch", "")),
        Delta(3, text=patch[:9]),
        Delta(3, text=patch[9:]),
        PartEnd(3),
        Finish(StopReason.TOOL_CALLS),
        Finish(None, Usage(input=120, output=30, cached_input=100, reasoning=8)),
    ]


def relayed_turn(_: Request) -> list[Event]:
    """A Responses upstream's stream, decoded: re-encoding it must satisfy the SDK too."""
    sse, decoder = SSEDecoder(), stream_decoder()
    raw = b"".join(encode_event(jsonio.dumps_str(e), e["type"]) for e in fixture("stream.json"))
    return [event for chunk in sse.feed(raw) for event in decoder.feed(chunk)]


def _accumulated(events: list[Event]) -> Response:
    acc = Accumulator(Wire.MESSAGES)
    for event in events:
        acc.add(copy.deepcopy(event))
    return acc.response()


@pytest.fixture
async def server_for() -> AsyncIterator[Callable[[Script], Any]]:
    """Starts a loopback server per script and yields an SDK client bound to it."""
    opened: list[tuple[TestServer, openai.AsyncOpenAI]] = []

    async def start(script: Script) -> openai.AsyncOpenAI:
        async def respond(request: web.Request) -> web.StreamResponse:
            req = decode_request(await request.json())
            events = script(req)
            if not req.params.stream:
                return web.json_response(encode_response(_accumulated(events), req))
            reply = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await reply.prepare(request)
            encoder = stream_encoder(req)
            for event in events:  # one write per event, as a relay would
                await reply.write(encoder.encode(copy.deepcopy(event)))
            await reply.write(encoder.close())
            await reply.write_eof()
            return reply

        app = web.Application()
        app.router.add_post("/v1/responses", respond)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        client = openai.AsyncOpenAI(
            base_url=f"http://127.0.0.1:{server.port}/v1", api_key="sk-test", max_retries=0
        )
        opened.append((server, client))
        return client

    yield start
    for server, client in opened:
        await client.close()
        await server.close()


async def test_create_stream_yields_every_event(server_for: Any) -> None:
    client = await server_for(foreign_turn)
    stream = await client.responses.create(
        model="gpt-5", input="list files", tools=TOOLS, stream=True
    )
    events = [event async for event in stream]
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Running ls."
    done = [e.item for e in events if e.type == "response.output_item.done"]
    assert [item.type for item in done] == [
        "reasoning",
        "message",
        "function_call",
        "custom_tool_call",
    ]
    final = events[-1].response  # type: ignore[union-attr]
    assert final.id == "msg_01Abc" and final.output_text == "Running ls."
    assert final.usage is not None and final.usage.input_tokens == 120


async def test_stream_helper_accumulates_the_final_response(server_for: Any) -> None:
    client = await server_for(foreign_turn)
    async with client.responses.stream(model="gpt-5", input="list files", tools=TOOLS) as stream:
        final = await stream.get_final_response()
    assert final.output_text == "Running ls."
    reasoning, _, call, patch = final.output
    assert reasoning.type == "reasoning" and reasoning.encrypted_content == "EqQBCkYIBxgCKkA"
    assert reasoning.summary[0].text == "Let me look."
    assert call.type == "function_call"
    assert (call.call_id, call.name, call.arguments) == ("toolu_1", "exec_command", '{"cmd":"ls"}')
    assert patch.type == "custom_tool_call"
    assert (patch.call_id, patch.name, patch.input) == ("toolu_2", "apply_patch", PATCH)
    usage = final.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (120, 30, 150)
    assert usage.input_tokens_details.cached_tokens == 100
    assert usage.output_tokens_details.reasoning_tokens == 8
    assert [t.name for t in final.tools] == ["exec_command", "apply_patch"]  # type: ignore[union-attr]


async def test_stream_helper_on_a_relayed_responses_stream(server_for: Any) -> None:
    client = await server_for(relayed_turn)
    async with client.responses.stream(model="gpt-5.1-codex", input="go") as stream:
        final = await stream.get_final_response()
    assert final.id == "resp_0c1d2e3f4a5b6c7d8e9f"
    assert final.output_text == "I'll run the tests — ünïcode ok."
    call = final.output[2]
    assert call.type == "function_call" and call.call_id == "call_S1"
    assert final.output[0].encrypted_content == "gAAAAABpStreamedBlob=="  # type: ignore[union-attr]
    assert final.usage is not None and final.usage.input_tokens == 2048


async def test_plain_create_parses_the_body(server_for: Any) -> None:
    client = await server_for(foreign_turn)
    final = await client.responses.create(model="gpt-5", input="list files", tools=TOOLS)
    assert final.output_text == "Running ls."
    assert final.status == "completed" and final.usage is not None
    assert final.output[3].type == "custom_tool_call" and final.output[3].input == PATCH
    assert isinstance(final.output[1], openai.types.responses.ResponseOutputMessage)
