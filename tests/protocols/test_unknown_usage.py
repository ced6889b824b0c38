"""A reply whose provider reported no usage (defect 7 of issue 25: a server that never sends a
usage chunk) reads as unknown usage on every wire, JSON and stream, never as zeros; encoded
for a client of another wire it carries no usage where that wire lets it be left out (Chat:
no ``usage``, no usage chunk even when asked; Responses: ``"usage": null``), each body and
event still valid for the wire's SDK."""

from __future__ import annotations

from typing import Any

import openai.types.chat
import openai.types.responses
import pytest
from multidict import CIMultiDict, CIMultiDictProxy
from pydantic import TypeAdapter

from skillstate.conversation import Accumulator, Event, Finish, Request, Start, Text, Wire
from skillstate.protocols import adapter
from skillstate.protocols.sse import SSEDecoder
from skillstate.protocols.streams import EventReader
from skillstate.support.jsonio import dumps, loads
from skillstate.testing import (
    RecordedRequest,
    Reply,
)
from skillstate.testing.outcome import resolve
from skillstate.testing.upstream import SPEAKERS

WHOLE = {wire: speaker.body for wire, speaker in SPEAKERS.items()}
STREAMED = {wire: speaker.stream for wire, speaker in SPEAKERS.items()}
over_wires = pytest.mark.parametrize("wire", list(Wire))


def _asked(wire: Wire, stream: bool) -> RecordedRequest:
    body: dict[str, Any] = {"model": "m", "stream": stream}
    if wire is Wire.CHAT:
        body["stream_options"] = {"include_usage": True}  # asked for, and still none comes
    return RecordedRequest(0, "POST", "/v1/x", {}, CIMultiDictProxy(CIMultiDict()), b"", body, wire)


def _events(wire: Wire, raw: bytes) -> list[Event]:
    reader = EventReader(wire)
    return reader.feed(raw) + reader.close()


def _accumulated(wire: Wire, events: list[Event]) -> Any:
    accumulator = Accumulator(wire)
    for event in events:
        accumulator.add(event)
    assert accumulator.finished
    return accumulator.response()


def _unreported_events(wire: Wire) -> list[Event]:
    outcome = resolve(Reply("It parses.", usage=False), _asked(wire, True))
    return _events(wire, b"".join(STREAMED[wire](outcome)))


@over_wires
def test_a_body_without_usage_reads_as_unknown(wire: Wire) -> None:
    outcome = resolve(Reply("It parses.", usage=False), _asked(wire, False))
    body = loads(dumps(WHOLE[wire](outcome)))
    response = adapter(wire).decode_response(body)
    assert response.usage is None
    assert adapter(wire).encode_response(response, None) == body  # and re-encodes as it came


@over_wires
def test_a_stream_without_usage_reads_as_unknown(wire: Wire) -> None:
    events = _unreported_events(wire)
    starts = [e for e in events if isinstance(e, Start)]
    finishes = [e for e in events if isinstance(e, Finish)]
    assert [s.usage for s in starts] == [None]
    assert finishes and all(f.usage is None for f in finishes)
    response = _accumulated(wire, events)
    assert response.usage is None
    assert [p.text for p in response.message.parts if isinstance(p, Text)] == ["It parses."]


CHAT_CLIENT = Request(model="m", messages=[], source=Wire.CHAT, extra={"stream_options": {}})
CHAT_ASKING = Request(
    model="m", messages=[], source=Wire.CHAT, extra={"stream_options": {"include_usage": True}}
)


@pytest.mark.parametrize("up", [Wire.RESPONSES, Wire.MESSAGES])
def test_a_chat_client_gets_no_usage_where_none_came(up: Wire) -> None:
    """Neither in its JSON body nor as a usage chunk, even when it asked for one."""
    events = _unreported_events(up)
    encoder = adapter(Wire.CHAT).stream_encoder(CHAT_ASKING)
    raw = b"".join(encoder.encode(event) for event in events) + encoder.close()
    chunks = [loads(e.data) for e in SSEDecoder().feed(raw) if e.data != "[DONE]"]
    chunk_type = TypeAdapter(openai.types.chat.ChatCompletionChunk)
    for chunk in chunks:
        assert chunk_type.validate_python(chunk).usage is None
    assert all(chunk["choices"] for chunk in chunks)  # no usage chunk (``choices: []``)
    body = adapter(Wire.CHAT).encode_response(_accumulated(up, events), CHAT_CLIENT)
    assert "usage" not in body
    TypeAdapter(openai.types.chat.ChatCompletion).validate_python(body)


@pytest.mark.parametrize("up", [Wire.CHAT, Wire.MESSAGES])
def test_a_responses_client_gets_a_null_usage_where_none_came(up: Wire) -> None:
    events = _unreported_events(up)
    encoder = adapter(Wire.RESPONSES).stream_encoder(None)
    raw = b"".join(encoder.encode(event) for event in events) + encoder.close()
    data = [loads(e.data) for e in SSEDecoder().feed(raw)]
    event_type = TypeAdapter(openai.types.responses.ResponseStreamEvent)
    for event in data:
        event_type.validate_python(event)
    assert data[-1]["type"] == "response.completed"
    assert data[-1]["response"]["usage"] is None
    body = adapter(Wire.RESPONSES).encode_response(_accumulated(up, events), None)
    assert body["usage"] is None
    TypeAdapter(openai.types.responses.Response).validate_python(body)
