"""Streams: this wire's events to canonical events and back, the stream law, and streams built
from another wire's canonical events, each event checked by the SDK's own types."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from anthropic.types import RawMessageStreamEvent
from anthropic_messages_samples import RESPONSE_BODIES, RESPONSE_BODY, stream_of
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from skillstate.conversation import (
    Accumulator,
    Delta,
    ErrorKind,
    Event,
    Failure,
    Finish,
    Image,
    Opaque,
    Part,
    PartEnd,
    PartStart,
    ProtocolError,
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
from skillstate.protocols.anthropic_messages import (
    decode_response,
    stream_decoder,
    stream_encoder,
)
from skillstate.protocols.sse import SSEDecoder, SSEEvent, encode_event
from skillstate.support.jsonio import dumps_str, loads

SDK_EVENT: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)


def _decode(raw: bytes, chunk: int = 7) -> list[Event]:
    """Bytes to canonical events, fed in ``chunk``-byte pieces as a relay would."""
    sse, decoder = SSEDecoder(), stream_decoder()
    events: list[Event] = []
    for i in range(0, len(raw), chunk):
        for event in sse.feed(raw[i : i + chunk]):
            events += decoder.feed(event)
    for event in sse.close():
        events += decoder.feed(event)
    return events + decoder.close()


def _encode(events: list[Event], request: Request | None = None) -> bytes:
    encoder = stream_encoder(request)
    return b"".join(encoder.encode(event) for event in events) + encoder.close()


def _response(events: list[Event], source: Wire = Wire.MESSAGES) -> Response:
    acc = Accumulator(source)
    for event in events:
        acc.add(event)
    assert acc.finished or acc.failure is not None
    return acc.response()


def _sdk_events(raw: bytes) -> list[Any]:
    """Every event parsed by the SDK's model, its ``event:`` line matching its type."""
    parsed = []
    for event in SSEDecoder().feed(raw):
        assert event.event is not None
        data = loads(event.data)
        assert data["type"] == event.event
        if event.event not in ("ping", "error"):
            parsed.append(SDK_EVENT.validate_python(data))
    return parsed


def _without_text_extra(parts: list[Part]) -> list[Part]:
    """Citations ride in the relayed bytes, not in canonical stream events."""
    return [replace(p, extra={}) if isinstance(p, Text) else p for p in parts]


def test_a_provider_stream_decodes_to_the_same_response_as_its_body() -> None:
    events = _decode(stream_of(RESPONSE_BODY))
    assert isinstance(events[0], Start)
    assert isinstance(events[-1], Finish)
    streamed, body = _response(events), decode_response(copy.deepcopy(RESPONSE_BODY))
    assert streamed.message.parts == body.message.parts
    assert streamed.usage == body.usage
    assert streamed.stop_reason is StopReason.TOOL_CALLS
    assert streamed.id == body.id and streamed.model == body.model


@settings(max_examples=150, deadline=None)
@given(RESPONSE_BODIES, st.integers(1, 5))
def test_the_stream_of_any_body_agrees_with_the_body(body: dict[str, Any], piece: int) -> None:
    streamed = _response(_decode(stream_of(body, piece)))
    decoded = decode_response(copy.deepcopy(body))
    assert streamed.message.parts == _without_text_extra(decoded.message.parts)
    assert streamed.usage == decoded.usage
    assert streamed.stop_reason == decoded.stop_reason


@settings(max_examples=150, deadline=None)
@given(RESPONSE_BODIES, st.integers(1, 5))
def test_stream_law(body: dict[str, Any], piece: int) -> None:
    """decode, encode with this wire's encoder, decode again: the same canonical response."""
    first = _decode(stream_of(body, piece))
    raw = _encode(first)
    if body["stop_reason"] != "a_future_reason":  # unknown to the SDK as upstream sent it
        _sdk_events(raw)
    assert _response(_decode(raw)) == _response(first)


def test_usage_merges_message_start_and_message_delta() -> None:
    body = copy.deepcopy(RESPONSE_BODY)
    raw = stream_of(body).replace(
        b'"usage":{"output_tokens":90}',
        b'"usage":{"output_tokens":90,"input_tokens":50,"cache_read_input_tokens":4100}',
    )
    finish = _decode(raw)[-1]
    assert isinstance(finish, Finish)
    assert finish.usage == Usage(
        input=50 + 4100 + 300, output=90, cached_input=4100, cache_write=300
    )


def _events(*items: tuple[str, dict[str, Any]]) -> bytes:
    return b"".join(encode_event(dumps_str({"type": name, **data}), name) for name, data in items)


_START = ("message_start", {"message": {"id": "msg_1", "model": "m", "usage": {"input_tokens": 3}}})


def test_a_tool_call_without_input_deltas_has_empty_object_arguments() -> None:
    raw = _events(
        _START,
        (
            "content_block_start",
            {
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t", "name": "n", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {"index": 0, "delta": {"type": "input_json_delta", "partial_json": ""}},
        ),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 4}}),
        ("message_stop", {}),
    )
    assert _response(_decode(raw)).message.parts == [ToolCall("t", "n", "{}")]


def test_ping_unknown_and_junk_events_are_ignored_and_types_fall_back_to_the_data() -> None:
    decoder = stream_decoder()
    assert decoder.feed(SSEEvent('{"type":"ping"}', "ping")) == []
    assert decoder.feed(SSEEvent('{"type":"future_event"}', "future_event")) == []
    assert decoder.feed(SSEEvent("not json", "content_block_delta")) == []
    start = decoder.feed(SSEEvent(dumps_str({"type": "message_start", **_START[1]})))
    assert start == [Start("msg_1", "m", Wire.MESSAGES, Usage(input=3))]


def test_an_error_event_is_a_failure() -> None:
    decoder = stream_decoder()
    decoder.feed(SSEEvent(dumps_str(_START[1] | {"type": "message_start"}), "message_start"))
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert decoder.feed(SSEEvent(dumps_str(error), "error")) == [
        Failure("Overloaded", ErrorKind.OVERLOADED, 529)
    ]
    assert decoder.close() == []
    assert stream_decoder().feed(SSEEvent("oops", "error")) == [
        Failure("upstream stream error", ErrorKind.UPSTREAM, 500)
    ]


def test_a_stream_that_ends_early_is_a_failure() -> None:
    decoder = stream_decoder()
    decoder.feed(SSEEvent(dumps_str(_START[1] | {"type": "message_start"}), "message_start"))
    assert decoder.close() == [Failure("the upstream stream ended early", ErrorKind.UPSTREAM, 502)]
    assert stream_decoder().close() == []


# -- streams from another wire ----------------------------------------------------------------

CHUNKS = st.lists(st.text(max_size=4), max_size=4)
PARTS = st.one_of(
    st.builds(lambda c: ("text", c, None), CHUNKS),
    st.builds(
        lambda args: ("tool", [args[: len(args) // 2], args[len(args) // 2 :]], None),
        st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=3), max_size=3).map(
            dumps_str
        ),
    ),
    st.builds(lambda c: ("custom", c, None), CHUNKS),
    st.builds(
        lambda c, s: ("thinking", c, s),
        CHUNKS,
        st.none() | st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=2),
    ),
)


def _foreign_stream(
    parts: list[tuple[str, list[str], list[str] | None]], stop: Any, late_usage: bool
) -> list[Event]:
    events: list[Event] = [Start("chatcmpl-1", "gpt-x", Wire.CHAT, created=1700000000)]
    for index, (kind, chunks, signature) in enumerate(parts, start=3):
        part: Part
        if kind == "text":
            part = Text("")
        elif kind == "thinking":
            part = Reasoning()
        else:
            part = ToolCall(
                f"call_{index}", "f", "", kind="custom" if kind == "custom" else "function"
            )
        events.append(PartStart(index, part))
        events += [Delta(index, chunk) for chunk in chunks]
        events += [Delta(index, signature=s) for s in signature or []]
        events.append(PartEnd(index))
    usage = Usage(input=120, output=30, cached_input=100, reasoning=5)
    events += [Finish(stop), Finish(None, usage)] if late_usage else [Finish(stop, usage)]
    return events


def _expected(part: Part) -> Part:
    if isinstance(part, ToolCall) and part.kind == "custom":
        return ToolCall(part.id, part.name, dumps_str({"input": part.arguments}))
    if isinstance(part, ToolCall) and not part.arguments:
        return replace(part, arguments="{}")
    return part


@settings(max_examples=150, deadline=None)
@given(
    st.lists(PARTS, max_size=4),
    st.sampled_from(
        [None, StopReason.END, StopReason.TOOL_CALLS, StopReason.LENGTH, StopReason.ERROR]
    ),
    st.booleans(),
)
def test_a_stream_from_another_wire_is_a_valid_stream_of_this_wire(
    parts: Any, stop: Any, late_usage: bool
) -> None:
    events = _foreign_stream(parts, stop, late_usage)
    raw = _encode(events)
    sdk = _sdk_events(raw)
    assert [e.type for e in sdk][:1] == ["message_start"] and sdk[-2].type == "message_delta"
    assert [e.index for e in sdk if e.type == "content_block_start"] == list(range(len(parts)))
    original, again = _response(events, Wire.CHAT), _response(_decode(raw))
    assert [_parsed(p) for p in again.message.parts] == [
        _parsed(_expected(p)) for p in original.message.parts
    ]
    assert again.usage == original.usage
    kept = stop in (StopReason.TOOL_CALLS, StopReason.LENGTH)
    assert again.stop_reason == (stop if kept else StopReason.END)
    assert (again.id, again.model) == ("chatcmpl-1", "gpt-x")


def _parsed(part: Part) -> Any:
    """Tool arguments compared as JSON values, the way the client reads them."""
    return replace(part, arguments=loads(part.arguments)) if isinstance(part, ToolCall) else part


def test_a_part_opening_closes_the_open_block() -> None:
    events: list[Event] = [
        Start("r", "m", Wire.CHAT),
        PartStart(0, Text("a")),
        PartStart(1, ToolCall("c", "f", "")),
        Delta(1, "{}"),
        Delta(0, "b"),
        PartEnd(1),
        PartEnd(0),
        Finish(StopReason.TOOL_CALLS, Usage(output=1)),
    ]
    kinds = [(e.type, getattr(e, "index", None)) for e in _sdk_events(_encode(events))]
    assert kinds == [
        ("message_start", None),
        ("content_block_start", 0),
        ("content_block_delta", 0),
        ("content_block_stop", 0),
        ("content_block_start", 1),
        ("content_block_delta", 1),
        ("content_block_delta", 0),
        ("content_block_stop", 1),
        ("message_delta", None),
        ("message_stop", None),
    ]


def test_events_before_start_open_the_message_with_the_requests_model() -> None:
    request = Request("claude-x", [], Wire.MESSAGES)
    raw = _encode(
        [PartStart(0, Text("hi")), PartEnd(0), Finish(StopReason.END, Usage(output=1))], request
    )
    start = _sdk_events(raw)[0]
    assert (start.message.id, start.message.model) == ("msg_skillstate", "claude-x")


def test_a_finish_without_usage_ends_the_stream_at_close() -> None:
    encoder = stream_encoder(None)
    encoder.encode(Start("r", "m", Wire.CHAT, usage=Usage(input=9, output=2)))
    assert encoder.encode(Finish(StopReason.END)) == b""
    raw = encoder.close()
    delta = _sdk_events(raw)[0]
    assert delta.type == "message_delta" and delta.usage.output_tokens == 2
    assert encoder.close() == b"" and encoder.encode(Delta(0, "late")) == b""


def test_a_failure_is_an_error_event_and_ends_the_stream() -> None:
    encoder = stream_encoder(None)
    encoder.encode(Start("r", "m", Wire.CHAT))
    raw = encoder.encode(Failure("slow down", ErrorKind.RATE_LIMIT, 429))
    assert raw == encode_event(
        '{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}', "error"
    )
    assert encoder.encode(Finish(StopReason.END, Usage())) == b"" and encoder.close() == b""


def test_a_stream_closed_before_it_finished_ends_with_an_error_event() -> None:
    encoder = stream_encoder(None)
    encoder.encode(Start("r", "m", Wire.CHAT))
    assert b'"type":"api_error"' in encoder.close()
    assert stream_encoder(None).close() == b""


@pytest.mark.parametrize(
    "part",
    [Image(url="https://x/y.png"), Opaque(Wire.CHAT, {"type": "audio"})],
)
def test_parts_a_stream_cannot_carry_are_refused(part: Part) -> None:
    encoder = stream_encoder(None)
    encoder.encode(Start("r", "m", Wire.CHAT))
    with pytest.raises(ProtocolError):
        encoder.encode(PartStart(0, part))


def test_a_redacted_thinking_block_is_sent_whole() -> None:
    events: list[Event] = [
        Start("r", "m", Wire.CHAT),
        PartStart(0, Reasoning(signature="data", redacted=True)),
        PartEnd(0),
        Finish(StopReason.END, Usage(output=1)),
    ]
    start = _sdk_events(_encode(events))[1]
    assert start.content_block.type == "redacted_thinking" and start.content_block.data == "data"


def test_a_tool_call_opening_with_its_input_reports_it_as_arguments() -> None:
    block = {
        "type": "tool_use",
        "id": "t",
        "name": "n",
        "input": {"q": 1},
        "caller": {"type": "direct"},
    }
    raw = _events(
        _START,
        ("content_block_start", {"index": 0, "content_block": block}),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 4}}),
    )
    events = _decode(raw)
    assert events[1:3] == [
        PartStart(0, ToolCall("t", "n", "", extra={"caller": {"type": "direct"}})),
        Delta(0, '{"q":1}'),
    ]
    again = _sdk_events(_encode(events))
    assert again[1].content_block.caller.type == "direct"


def test_message_stop_without_message_delta_finishes_with_the_start_usage() -> None:
    events = _decode(_events(_START, ("message_stop", {})))
    assert events[-1] == Finish(None, Usage(input=3))


def test_a_malformed_usage_object_is_ignored() -> None:
    decoder = stream_decoder()
    bad = {
        "type": "message_start",
        "message": {"id": "i", "model": "m", "usage": {"input_tokens": "3"}},
    }
    assert decoder.feed(SSEEvent(dumps_str(bad), "message_start")) == []


def test_this_wires_own_end_of_message_fields_re_encode_exactly() -> None:
    delta = {
        "stop_reason": "model_context_window_exceeded",
        "stop_sequence": "END",
        "stop_details": None,
    }
    raw = _events(
        _START,
        (
            "message_delta",
            {
                "delta": delta,
                "usage": {
                    "output_tokens": 4,
                    "server_tool_use": {"web_search_requests": 2, "web_fetch_requests": 0},
                },
            },
        ),
        ("message_stop", {}),
    )
    events = _decode(raw)
    assert isinstance(events[-1], Finish) and events[-1].stop_reason is StopReason.LENGTH
    again = next(e for e in _sdk_events(_encode(events)) if e.type == "message_delta")
    assert (again.delta.stop_reason, again.delta.stop_sequence) == (
        "model_context_window_exceeded",
        "END",
    )
    assert again.usage.server_tool_use.web_search_requests == 2


def test_a_signature_given_when_thinking_opens_is_sent_before_it_stops() -> None:
    events: list[Event] = [
        Start("r", "m", Wire.RESPONSES),
        PartStart(0, Reasoning("why", signature="enc")),
        PartStart(0, Text("a repeated opening is ignored")),
        PartEnd(0),
        Finish(StopReason.END, Usage(output=1)),
    ]
    deltas = [e.delta for e in _sdk_events(_encode(events)) if e.type == "content_block_delta"]
    assert [
        (d.type, getattr(d, "thinking", None) or getattr(d, "signature", None)) for d in deltas
    ] == [
        ("thinking_delta", "why"),
        ("signature_delta", "enc"),
    ]


def test_later_usage_fields_leave_the_start_event_as_it_was() -> None:
    start = {
        "message": {
            "id": "i",
            "model": "m",
            "usage": {"input_tokens": 1, "service_tier": "standard"},
        }
    }
    tools = {"web_search_requests": 1, "web_fetch_requests": 0}
    events = _decode(
        _events(
            ("message_start", start),
            (
                "message_delta",
                {
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 2, "server_tool_use": tools},
                },
            ),
        )
    )
    first, last = events[0], events[-1]
    assert isinstance(first, Start) and first.extra["usage"] == {"service_tier": "standard"}
    assert isinstance(last, Finish)
    assert last.extra["usage"] == {"service_tier": "standard", "server_tool_use": tools}
