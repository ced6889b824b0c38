"""The express relay's watch (``protocols.tails``) against the full decoder: on every wire, for
replies of text, tool calls, reasoning and errors, with and without usage, whole or cut at any
byte, in any chunking, ``StreamTail`` tells a stream whole, cut or ended short exactly where
``streams.StreamObserver`` does, and the usage and model it reads from the tail are the
decoded reply's."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from skillstate.conversation import Text, Wire
from skillstate.protocols import adapter
from skillstate.protocols.streams import StreamObserver
from skillstate.protocols.tails import StreamTail, json_reply
from skillstate.support.jsonio import dumps, loads
from skillstate.testing import (
    RecordedRequest,
    Reply,
    ScriptedCall,
    ScriptedError,
)
from skillstate.testing.outcome import resolve
from skillstate.testing.upstream import SPEAKERS

WHOLE = {wire: speaker.body for wire, speaker in SPEAKERS.items()}
STREAMED = {wire: speaker.stream for wire, speaker in SPEAKERS.items()}

REPLIES = [
    Reply("All the tests pass."),
    Reply("", calls=[ScriptedCall("run", {"cmd": 'echo "finish_reason":"stop" [DONE]'})]),
    Reply("Looked.", reasoning="First the files, then the tests."),
    Reply("It parses.", usage=False),
    Reply('a text that says data: [DONE] and "type":"message_stop"', cached_tokens=64),
    Reply("half", error=ScriptedError(529, "the model is busy", "overloaded", mid_stream=True)),
]


def _asked(wire: Wire, stream: bool) -> RecordedRequest:
    body: dict[str, Any] = {"model": "tail-model", "stream": stream}
    if wire is Wire.CHAT:
        body["stream_options"] = {"include_usage": True}
    return RecordedRequest(0, "POST", "/v1/x", {}, CIMultiDictProxy(CIMultiDict()), b"", body, wire)


def _stream(wire: Wire, reply: Reply) -> bytes:
    return b"".join(STREAMED[wire](resolve(reply, _asked(wire, True))))


def _chunks(raw: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, *(c % (len(raw) + 1) for c in cuts), len(raw)})
    return [raw[a:b] for a, b in itertools.pairwise(points) if b > a]


@settings(max_examples=150, deadline=None)
@given(
    wire=st.sampled_from(list(Wire)),
    which=st.integers(0, len(REPLIES) - 1),
    end=st.one_of(st.none(), st.integers(0, 10_000)),
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
)
def test_a_stream_is_whole_cut_or_ended_short_as_the_decoder_says(
    wire: Wire, which: int, end: int | None, cuts: list[int]
) -> None:
    raw = _stream(wire, REPLIES[which])
    if end is not None:
        raw = raw[: end % (len(raw) + 1)]  # cut short anywhere, or not at all
    tail, observer = StreamTail(wire), StreamObserver(wire)
    for chunk in _chunks(raw, cuts):
        tail.feed(chunk)
        observer.feed(chunk)
        assert tail.ended_short == observer.ended_short
        if tail.ended_short:  # the relay stops here, as at the decoder's word
            break
    reply = tail.close()
    response = observer.close()
    assert tail.cut == observer.cut
    if not tail.cut and response is not None:
        usage, model = reply.usage()
        assert usage == response.usage
        assert model == response.model


@pytest.mark.parametrize("wire", list(Wire))
@pytest.mark.parametrize("which", range(len(REPLIES)))
def test_a_stream_fed_a_byte_at_a_time_is_told_as_the_decoder_says(wire: Wire, which: int) -> None:
    """A marker split over several chunks, each shorter than the overlap, is still found."""
    raw = _stream(wire, REPLIES[which])
    tail, observer = StreamTail(wire), StreamObserver(wire)
    for at in range(len(raw)):
        tail.feed(raw[at : at + 1])
        observer.feed(raw[at : at + 1])
        assert tail.ended_short == observer.ended_short
        if tail.ended_short:
            break
    tail.close()
    observer.close()
    assert tail.cut == observer.cut


@pytest.mark.parametrize("wire", list(Wire))
@pytest.mark.parametrize("reply", REPLIES[:5], ids=range(5))
def test_a_json_reply_reads_as_its_decoded_usage_and_model(wire: Wire, reply: Reply) -> None:
    raw = dumps(WHOLE[wire](resolve(reply, _asked(wire, False))))
    decoded = adapter(wire).decode_response(loads(raw))
    usage, model = json_reply(wire, raw).usage()
    assert (usage, model) == (decoded.usage, decoded.model)


@pytest.mark.parametrize("wire", list(Wire))
def test_a_json_reply_cut_short_or_of_another_shape_is_not_whole(wire: Wire) -> None:
    raw = dumps(WHOLE[wire](resolve(REPLIES[0], _asked(wire, False))))
    with pytest.raises(ValueError):
        json_reply(wire, raw[:-3])
    with pytest.raises(ValueError, match="not a"):
        json_reply(wire, b'{"id": "x", "object": "list"}')


_DELTAS = st.one_of(
    st.fixed_dictionaries({"content": st.text(max_size=6)}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.just("")}),
    st.fixed_dictionaries({"content": st.none(), "refusal": st.none(), "tool_calls": st.none()}),
    st.fixed_dictionaries({"reasoning_content": st.text(max_size=4)}),
    st.fixed_dictionaries({"refusal": st.text(max_size=4)}),
    st.fixed_dictionaries(
        {"tool_calls": st.just([{"index": 0, "id": "c", "function": {"arguments": "{}"}}])}
    ),
)
_CHAT_EVENTS = st.one_of(
    _DELTAS.map(lambda delta: {"model": "m", "choices": [{"index": 0, "delta": delta}]}),
    _DELTAS.map(lambda delta: {"choices": [{"index": 1, "delta": delta}]}),  # another choice
    st.just({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    st.just({"choices": [], "usage": None}),
    st.just({"error": {"message": "busy"}}),
    st.just("[DONE]"),
    st.just("keep-alive"),
    st.just([1]),
)


def _chat_stream(events: list[Any], model: Any) -> bytes:
    out = []
    for number, event in enumerate(events):
        if isinstance(event, dict) and not number:
            event = {**event, "model": model}
        data = event.encode() if isinstance(event, str) else dumps(event)
        out.append(b"data: " + data + b"\n\n")
    return b"".join(out)


@settings(max_examples=300, deadline=None)
@given(events=st.lists(_CHAT_EVENTS, max_size=12), model=st.one_of(st.text(max_size=3), st.none()))
def test_a_chat_streams_text_reads_as_its_decoder_rebuilds_it(
    events: list[Any], model: Any
) -> None:
    """``chat_text`` (the ledger's way to count a Chat stream that reported no usage)
    gives the decoder's text and model, or leaves the stream to the decoder."""
    raw = _chat_stream(events, model)
    observer = StreamObserver(Wire.CHAT)
    observer.feed(raw)
    response = observer.close()
    said = StreamTail(Wire.CHAT)
    said.feed(raw)
    text = said.close().chat_text()
    if text is None:
        return
    assert response is not None
    parts = response.message.parts
    assert [type(part) for part in parts] == ([Text] if text[0] else [])
    assert "".join(part.text for part in parts if isinstance(part, Text)) == text[0]
    assert not any(part.hints for part in parts if isinstance(part, Text))
    assert text[1] == response.model


@pytest.mark.parametrize("which", [0, 3, 4])
def test_a_chat_stream_of_text_alone_is_read_without_its_decoder(which: int) -> None:
    raw = _stream(Wire.CHAT, REPLIES[which])
    tail = StreamTail(Wire.CHAT)
    tail.feed(raw)
    response = StreamObserver(Wire.CHAT)
    response.feed(raw)
    decoded = response.close()
    assert decoded is not None
    assert tail.close().chat_text() == (REPLIES[which].text, decoded.model)


@pytest.mark.parametrize("which", [1, 2, 5])
def test_a_chat_stream_with_other_parts_is_left_to_its_decoder(which: int) -> None:
    tail = StreamTail(Wire.CHAT)
    tail.feed(_stream(Wire.CHAT, REPLIES[which]))
    assert tail.close().chat_text() is None
