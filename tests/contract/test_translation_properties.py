"""Translation between any two wires keeps what matters: every text, every tool call's id,
name and arguments, and every tool result with the id of the call it answers, in order.
Requests, JSON responses and streams alike, and a reply's usage: every figure the wires it
passed through can say. What only one wire can carry goes to that wire or is refused, never
dropped."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from skillstate.conversation import (
    Accumulator,
    Delta,
    Event,
    Finish,
    Message,
    Opaque,
    Params,
    Part,
    PartEnd,
    PartStart,
    ProtocolError,
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
from skillstate.protocols import adapter
from skillstate.protocols.sse import SSEDecoder
from skillstate.protocols.streams import EventReader
from skillstate.state.rounds import Done, Rounds

WIRES = list(Wire)
words = st.text(alphabet="abcdefghij klmnop,.é日", min_size=1, max_size=30).filter(str.strip)
ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=6, max_size=16)
names = st.sampled_from(["read_file", "run", "grep", "edit_file"])
json_args = st.dictionaries(
    st.sampled_from(["path", "cmd", "n", "flag"]),
    st.one_of(words, st.integers(-5, 10**6), st.booleans()),
    max_size=3,
)


@st.composite
def conversations(draw: st.DrawFn) -> Request:
    """A tool loop: a user task, then turns of (assistant text + parallel calls, results)."""
    messages = [Message("user", [Text(draw(words))])]
    used: set[str] = set()
    for _ in range(draw(st.integers(0, 4))):
        calls: list[Part] = []
        for _ in range(draw(st.integers(1, 3))):
            call_id = "call_" + draw(ids.filter(lambda i: "call_" + i not in used))
            used.add(call_id)
            arguments = json.dumps(draw(json_args), separators=(",", ":"))
            calls.append(ToolCall(call_id, draw(names), arguments))
        text: list[Part] = [Text(draw(words))] if draw(st.booleans()) else []
        messages.append(Message("assistant", [*text, *calls]))
        for call in calls:
            assert isinstance(call, ToolCall)
            messages.append(Message("tool", [ToolResult(call.id, [Text(draw(words))])]))
    if draw(st.booleans()):
        messages.append(Message("user", [Text(draw(words))]))
    system = [Text(draw(words))] if draw(st.booleans()) else []
    return Request(model="m", messages=messages, source=Wire.CHAT, system=system)


def essence(request: Request) -> list[tuple[Any, ...]]:
    """What must survive, ignoring how each wire groups it into messages."""
    system = [p.text for p in request.system]
    out: list[tuple[Any, ...]] = []
    for message in request.messages:
        for part in message.parts:
            role = message.role
            if role in ("system", "developer") and isinstance(part, Text):
                system.append(part.text)  # wires differ in where system text goes, not in what
            elif isinstance(part, Text):
                out.append((role, part.text))
            elif isinstance(part, ToolCall):
                out.append(("call", part.id, part.name, json.loads(part.arguments or "{}")))
            elif isinstance(part, ToolResult):
                text = "".join(c.text for c in part.content if isinstance(c, Text))
                out.append(("result", part.call_id, text))
    return [("system", " ".join(t.strip() for t in system)), *out]


def through(request: Request, first: Wire, second: Wire) -> Request:
    """Client wire ``first`` decodes its body; the gateway encodes it for ``second``; the
    upstream decodes what it got."""
    body = adapter(first).encode_request(request)
    decoded = adapter(first).decode_request(json.loads(json.dumps(body)))
    sent = adapter(second).encode_request(decoded)
    return adapter(second).decode_request(json.loads(json.dumps(sent)))


@settings(max_examples=150, deadline=None)
@given(conversations(), st.sampled_from(WIRES), st.sampled_from(WIRES))
def test_requests_keep_texts_calls_and_results(request: Request, a: Wire, b: Wire) -> None:
    assert essence(through(request, a, b)) == essence(request)


def _holds(value: Any, item: Any) -> bool:
    """Whether ``item`` is ``value`` or sits anywhere inside it."""
    if value == item:
        return True
    if isinstance(value, dict):
        return any(_holds(v, item) for v in value.values())
    return isinstance(value, list) and any(_holds(v, item) for v in value)


@settings(max_examples=100, deadline=None)
@given(conversations(), st.sampled_from(WIRES), st.sampled_from(WIRES))
def test_an_opaque_item_of_a_tool_result_goes_to_its_own_wire_only(
    request: Request, owner: Wire, target: Wire
) -> None:
    """A result holding a block only its wire knows (Claude Code's ``tool_reference``) is sent
    with it on that wire, and refused by name on any other: never dropped."""
    results = [p for m in request.messages for p in m.parts if isinstance(p, ToolResult)]
    assume(results)
    item = {"type": "vendor_block", "tool_name": "mcp__docs__search"}
    results[0].content.append(Opaque(owner, item))
    if owner is target:
        assert _holds(adapter(target).encode_request(request), item)
        return
    with pytest.raises(ProtocolError) as caught:
        adapter(target).encode_request(request)
    assert caught.value.status == 400 and "vendor_block" in caught.value.message


@st.composite
def replies(draw: st.DrawFn) -> Response:
    parts: list[Part] = [Text(draw(words))] if draw(st.booleans()) else []
    for n in range(draw(st.integers(0 if parts else 1, 3))):
        arguments = json.dumps(draw(json_args), separators=(",", ":"))
        parts.append(ToolCall(f"call_{n}_" + draw(ids), draw(names), arguments))
    stop = StopReason.TOOL_CALLS if any(isinstance(p, ToolCall) for p in parts) else StopReason.END
    return Response("resp_1", "m", Message("assistant", parts), Wire.CHAT, stop, draw(usages()))


@st.composite
def usages(draw: st.DrawFn) -> Usage:
    """Any usage a provider could report: the cache reads and writes are parts of the input,
    the one-hour writes part of the writes, the reasoning part of the output."""
    cached = draw(st.integers(0, 10**5))
    written = draw(st.integers(0, 10**5))
    output = draw(st.integers(1, 10**4))
    return Usage(
        input=cached + written + draw(st.integers(1, 10**5)),
        output=output,
        cached_input=cached,
        cache_write=written,
        reasoning=draw(st.integers(0, output)),
        cache_write_1h=draw(st.integers(0, written)),
    )


def carried(usage: Usage, *wires: Wire) -> Usage:
    """What of ``usage`` passes through ``wires``: only Anthropic's breaks the cache writes
    down by time to live."""
    if all(wire is Wire.MESSAGES for wire in wires):
        return usage
    return dataclasses.replace(usage, cache_write_1h=0)


def reply_essence(response: Response) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = [("stop", response.stop_reason)]
    for part in response.message.parts:
        if isinstance(part, Text) and part.text:
            out.append(("text", part.text))
        elif isinstance(part, ToolCall):
            out.append(("call", part.id, part.name, json.loads(part.arguments or "{}")))
    return out


@settings(max_examples=150, deadline=None)
@given(replies(), st.sampled_from(WIRES), st.sampled_from(WIRES))
def test_json_responses_keep_text_calls_and_usage(
    response: Response, up: Wire, client: Wire
) -> None:
    body = json.loads(json.dumps(adapter(up).encode_response(response, None)))
    decoded = adapter(up).decode_response(body)
    shown = json.loads(json.dumps(adapter(client).encode_response(decoded, None)))
    again = adapter(client).decode_response(shown)
    assert reply_essence(again) == reply_essence(response)
    assert again.usage == carried(response.usage, up, client)


def events_of(response: Response) -> list[Event]:
    events: list[Event] = [Start(response.id, response.model)]
    for index, part in enumerate(response.message.parts):
        if isinstance(part, Text):
            events.append(PartStart(index, Text("")))
            half = len(part.text) // 2
            events += [Delta(index, part.text[:half]), Delta(index, part.text[half:])]
        elif isinstance(part, ToolCall):
            events.append(PartStart(index, ToolCall(part.id, part.name, "")))
            cut = len(part.arguments) // 2
            events += [Delta(index, part.arguments[:cut]), Delta(index, part.arguments[cut:])]
        events.append(PartEnd(index))
    events.append(Finish(response.stop_reason, response.usage))
    return events


def stream_bytes(wire: Wire, events: list[Event]) -> bytes:
    encoder = adapter(wire).stream_encoder(None)
    return b"".join(encoder.encode(e) for e in events) + encoder.close()


def decode_stream(wire: Wire, raw: bytes) -> Response:
    reader = EventReader(wire)
    accumulator = Accumulator(wire)
    for event in reader.feed(raw) + reader.close():
        accumulator.add(event)
    return accumulator.response()


def translate(up: Wire, client: Wire, chunks: list[bytes]) -> bytes:
    """What the gateway does to a translated stream: read it, pass it through the round loop
    (no internal tools here), encode it for the client."""
    request = Request(model="m", messages=[], source=client, params=Params(stream=True))
    rounds = Rounds(request)
    encoder = adapter(client).stream_encoder(None)
    reader = EventReader(up)
    rounds.begin(up)
    out = bytearray()
    for chunk in [*chunks, None]:
        events = reader.feed(chunk) if chunk is not None else reader.close()
        out += b"".join(encoder.encode(e) for event in events for e in rounds.view(event))
    assert isinstance(rounds.ended(), Done)
    out += b"".join(encoder.encode(e) for e in rounds.closing()) + encoder.close()
    return bytes(out)


@settings(max_examples=150, deadline=None)
@given(replies(), st.sampled_from(WIRES), st.sampled_from(WIRES), st.integers(1, 97))
def test_streams_keep_text_calls_and_usage(
    response: Response, up: Wire, client: Wire, chunk: int
) -> None:
    upstream_bytes = stream_bytes(up, events_of(response))
    # arbitrary network chunking
    pieces = [upstream_bytes[i : i + chunk] for i in range(0, len(upstream_bytes), chunk)]
    out = translate(up, client, pieces)
    assert SSEDecoder().feed(bytes(out))  # the client got real SSE events
    again = decode_stream(client, bytes(out))
    assert reply_essence(again) == reply_essence(response)
    assert again.usage == carried(response.usage, up, client)
