"""The request flow when the state engine took the request: the internal tool loop.

The model may call ``skill_state`` or ``recall``. The gateway answers those itself, removes them
from what the client sees, and continues the turn upstream (at most ``max_internal_rounds``
more requests), so the client gets one reply holding only calls to its own tools. When a reply
calls the client's tools too, the internal calls are answered (Σ is patched) and the reply goes
to the client without another round. Streams stay streams: the client's events flow as they
arrive, the internal parts are held back, and a continuation's parts follow in the same
client stream under the next part numbers.

Paper mode: a non-streaming reply whose envelope is invalid is retried with a correction note
(``paper_retries`` times at most); a streamed one is checked once it has ended.

Σ is committed before the client has the whole reply (a JSON body is sent after the state
work, a stream's terminal event waits for it), so a client's next request always sees it. What
the observers get is the reply as the client saw it: the visible parts of every round, the
usage summed over the rounds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from skillstate import jsonio
from skillstate.conversation import (
    Accumulator,
    Delta,
    Event,
    Failure,
    Finish,
    Message,
    Part,
    PartEnd,
    PartStart,
    Request,
    Response,
    Start,
    StopReason,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    Wire,
)
from skillstate.exchange import Exchange
from skillstate.protocols import StreamEncoder, adapter
from skillstate.protocols.headers import upstream_headers
from skillstate.protocols.portable import namespace_map, portable_request, restore_namespace
from skillstate.protocols.sse import SSEDecoder
from skillstate.server.context import GatewayContext
from skillstate.server.relay import relay_upstream_error, restore_namespaces
from skillstate.state.engine import INTERNAL, Prepared, StateEngine
from skillstate.upstream.routing import Upstream

log = logging.getLogger("skillstate.stateful")


@dataclass(slots=True)
class Flow:
    """One client request served through the engine."""

    request: web.Request
    gateway: GatewayContext
    engine: StateEngine
    prepared: Prepared
    upstream: Upstream
    target: Wire
    headers: dict[str, str]
    usage: Usage = field(default_factory=Usage)
    exchange: Exchange | None = None

    def record(self, status: int, response: Response | None) -> None:
        if self.exchange is not None:
            self.exchange.status = status
            self.exchange.response = response

    @property
    def client(self) -> Request:
        return self.prepared.client

    def post(self, outbound: Request) -> aiohttp.client._RequestContextManager:
        portable, _ = portable_request(outbound, self.target)
        portable = adapter(self.target).for_upstream(portable)
        body = jsonio.dumps(adapter(self.target).encode_request(portable))
        headers = upstream_headers(
            self.request.headers,
            client_wire=self.client.source,
            upstream_wire=self.target,
            api_key=self.upstream.api_key,
            extra=self.upstream.headers,
        )
        url = self.upstream.url(adapter(self.target).path)
        if self.target is self.client.source and self.request.query_string:
            url += "?" + self.request.query_string
        return self.gateway.client.post(url, body, headers)


def split(parts: list[Part]) -> tuple[list[ToolCall], list[Part]]:
    internal = [p for p in parts if isinstance(p, ToolCall) and p.name in INTERNAL]
    return internal, [p for p in parts if not (isinstance(p, ToolCall) and p.name in INTERNAL)]


def continued(request: Request, reply: list[Part], answers: list[tuple[ToolCall, str]]) -> Request:
    """The request again, with the model's reply and the answers to its internal calls."""
    results = [Message("tool", [ToolResult(call.id, [Text(text)])]) for call, text in answers]
    messages = [*request.messages, Message("assistant", list(reply)), *results]
    return dataclasses.replace(request, messages=messages)


def corrected(request: Request, reply: list[Part], note: str) -> Request:
    texts: list[Part] = [p for p in reply if isinstance(p, Text)] or [Text("")]
    messages = [*request.messages, Message("assistant", texts), Message("user", [Text(note)])]
    return dataclasses.replace(request, messages=messages)


def _final_stop(response: Response, shown: list[Part]) -> None:
    if response.stop_reason is StopReason.TOOL_CALLS and not any(
        isinstance(p, ToolCall) for p in shown
    ):
        response.stop_reason = StopReason.END


async def complete(flow: Flow) -> web.StreamResponse:
    outbound = flow.prepared.request
    shown: list[Part] = []
    retries = flow.engine.config.paper_retries if flow.prepared.mode == "paper" else 0
    rounds = 0
    while True:
        async with flow.post(outbound) as reply:
            if reply.status >= 400:
                flow.record(reply.status, None)
                return await relay_upstream_error(
                    flow.request, reply, flow.client.source, flow.target, flow.headers
                )
            raw = await reply.read()
        response = adapter(flow.target).decode_response(jsonio.loads(raw))
        flow.usage = flow.usage + response.usage
        internal, external = split(response.message.parts)
        answers = [(call, await flow.engine.answer(flow.prepared, call)) for call in internal]
        has_calls = any(isinstance(p, ToolCall) for p in external)
        if answers and not has_calls and rounds < flow.engine.config.max_internal_rounds:
            shown += [p for p in external if isinstance(p, Text) and p.text]
            outbound = continued(outbound, response.message.parts, answers)
            rounds += 1
            continue
        if retries:
            note = await flow.engine.check_paper(flow.prepared, response)
            if note is not None:
                outbound = corrected(outbound, response.message.parts, note)
                retries -= 1
                continue
        elif flow.prepared.mode == "paper":
            await flow.engine.check_paper(flow.prepared, response)
        break
    response.message.parts = shown + external
    response.usage = flow.usage
    _final_stop(response, response.message.parts)
    restore_namespaces(response, flow.client)
    body = jsonio.dumps(adapter(flow.client.source).encode_response(response, flow.client))
    out = web.Response(status=200, body=body, headers=flow.headers, content_type="application/json")
    flow.record(200, response)
    await asyncio.shield(flow.engine.finish(flow.prepared, response))
    return out


@dataclass(slots=True)
class _Round:
    """One upstream stream being relayed: which parts are hidden, how indexes map."""

    accumulator: Accumulator
    hidden: set[int] = field(default_factory=set)
    finish: Finish | None = None
    failed: bool = False


class _ClientStream:
    """The client's one stream across every round: lazily opened, numbered consistently."""

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self.encoder: StreamEncoder = adapter(flow.client.source).stream_encoder(flow.client)
        self.out: web.StreamResponse | None = None
        self.started = False
        self.numbers: dict[tuple[int, int], int] = {}
        self.names = namespace_map(flow.client)

    async def write(self, data: bytes) -> None:
        if not data:
            return
        if self.out is None:
            exchange = self.flow.exchange
            if exchange is not None:
                exchange.first_byte_s = time.perf_counter() - exchange.started
            self.out = web.StreamResponse(status=200, headers=self.flow.headers)
            self.out.content_type = "text/event-stream"
            self.out.headers["cache-control"] = "no-cache"
            await self.out.prepare(self.flow.request)
        await self.out.write(data)

    def route(self, round_no: int, state: _Round, event: Event) -> bytes:
        state.accumulator.add(event)
        if isinstance(event, Start):
            if self.started:
                return b""
            self.started = True
            return self.encoder.encode(event)
        if isinstance(event, PartStart):
            part = event.part
            if isinstance(part, ToolCall) and part.name in INTERNAL:
                state.hidden.add(event.index)
                return b""
            if isinstance(part, ToolCall) and self.names:
                part = restore_namespace(part, self.names)
            number = self.numbers.setdefault((round_no, event.index), len(self.numbers))
            return self.encoder.encode(PartStart(number, part))
        if isinstance(event, Delta | PartEnd):
            if event.index in state.hidden:
                return b""
            known = self.numbers.get((round_no, event.index))
            if known is None:
                return b""
            return self.encoder.encode(dataclasses.replace(event, index=known))
        if isinstance(event, Finish):
            state.finish = event
            return b""
        if isinstance(event, Failure):
            state.failed = True
            return self.encoder.encode(event)
        return b""


async def _relay_round(
    stream: _ClientStream, reply: aiohttp.ClientResponse, round_no: int
) -> _Round:
    target = stream.flow.target
    state = _Round(Accumulator(target))
    sse = SSEDecoder()
    decoder = adapter(target).stream_decoder()
    try:
        async for chunk in reply.content.iter_any():
            out = bytearray()
            for event in sse.feed(chunk):
                for item in decoder.feed(event):
                    out += stream.route(round_no, state, item)
            await stream.write(bytes(out))
    except aiohttp.ClientPayloadError as exc:
        await stream.write(stream.route(round_no, state, Failure(f"upstream stream broke: {exc}")))
    out = bytearray()
    for event in sse.close():
        for item in decoder.feed(event):
            out += stream.route(round_no, state, item)
    for item in decoder.close():
        out += stream.route(round_no, state, item)
    await stream.write(bytes(out))
    return state


async def stream(flow: Flow) -> web.StreamResponse:
    client = _ClientStream(flow)
    ended = await _stream_rounds(flow, client)
    if isinstance(ended, web.StreamResponse):
        return ended
    response, final = ended
    # Σ is committed before the client's last event, as a JSON reply's is before it is sent:
    # a loop that sends its next request at once (a paper-mode agent does) must see the patch.
    # Shielded: a client that goes away meanwhile does not cancel the state work.
    await asyncio.shield(_after_reply(flow, response))
    if final is not None:
        await client.write(client.encoder.encode(final))
    await client.write(client.encoder.close())
    if client.out is None:
        return await _empty_stream(flow)
    await client.out.write_eof()
    return client.out


async def _stream_rounds(
    flow: Flow, client: _ClientStream
) -> tuple[Response | None, Finish | None] | web.StreamResponse:
    """Relay rounds until the turn is the client's again. Returns the reply as the client saw
    it (every round's visible parts, the summed usage) and the terminal event still to send
    (None after a failure, already sent); or the upstream's error, when it refused before the
    client's stream opened."""
    outbound = flow.prepared.request
    response: Response | None = None
    shown: list[Part] = []
    rounds = 0
    while True:
        async with flow.post(outbound) as reply:
            if reply.status >= 400:
                flow.record(reply.status, None)
                if client.out is None:
                    return await relay_upstream_error(
                        flow.request, reply, flow.client.source, flow.target, flow.headers
                    )
                await client.write(client.encoder.encode(Failure("upstream refused")))
                return response, None
            state = await _relay_round(client, reply, rounds)
        response = state.accumulator.response()
        if state.finish is not None and state.finish.usage is not None:
            flow.usage = flow.usage + state.finish.usage
        said = response.message.parts
        internal, external = split(said)
        response.message.parts, response.usage = shown + external, flow.usage
        if state.failed:
            return response, None
        answers = [(call, await flow.engine.answer(flow.prepared, call)) for call in internal]
        has_calls = any(isinstance(p, ToolCall) for p in external)
        if answers and not has_calls and rounds < flow.engine.config.max_internal_rounds:
            shown += external
            outbound = continued(outbound, said, answers)
            rounds += 1
            continue
        _final_stop(response, external)
        return response, Finish(response.stop_reason, flow.usage)


async def _after_reply(flow: Flow, response: Response | None) -> None:
    if response is None:
        return
    flow.record(200, response)
    if flow.prepared.mode == "paper":
        await flow.engine.check_paper(flow.prepared, response)
    await flow.engine.finish(flow.prepared, response)


async def _empty_stream(flow: Flow) -> web.StreamResponse:
    """The upstream sent nothing at all: the client still gets a well-formed, empty stream."""
    out = web.StreamResponse(status=200, headers=flow.headers)
    out.content_type = "text/event-stream"
    await out.prepare(flow.request)
    await out.write_eof()
    return out
