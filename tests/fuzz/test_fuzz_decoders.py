"""Every decoder of every wire, fed mutants of the corpus: a value or a ``ProtocolError``,
never another exception. What decodes also encodes for every wire (or is refused with a
``ProtocolError``), and writes as JSON: a request the gateway accepted never fails later.
An error body of any shape reads as a kind and a message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fuzz_corpus import CORPUS, load, mutants, seeds, stream_events
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillstate.conversation import ErrorKind, ProtocolError, Wire
from skillstate.economics.tokenizer import count_request
from skillstate.protocols import adapter
from skillstate.protocols.sse import SSEEvent
from skillstate.support import jsonio

FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
WIRES = list(Wire)


def _seed_docs(wire: Wire, kind: str) -> st.SearchStrategy[Any]:
    return st.sampled_from([load(path) for path in seeds(wire, kind)])


def _translate(request: Any) -> None:
    """What the gateway does with a decoded request: counts it, and encodes it for any wire."""
    count_request(request)
    for target in WIRES:
        try:
            body = adapter(target).encode_request(request)
        except ProtocolError:
            continue  # a request the target wire cannot carry: refused by name
        jsonio.dumps(body)


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.value)
@FUZZ
@given(data=st.data())
def test_request_decoders(wire: Wire, data: st.DataObject) -> None:
    body = data.draw(_seed_docs(wire, "request").flatmap(mutants))
    try:
        request = adapter(wire).decode_request(body)
    except ProtocolError:
        return
    _translate(request)


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.value)
@FUZZ
@given(data=st.data())
def test_response_decoders(wire: Wire, data: st.DataObject) -> None:
    body = data.draw(_seed_docs(wire, "response").flatmap(mutants))
    try:
        response = adapter(wire).decode_response(body)
    except ProtocolError:
        return
    for target in WIRES:
        try:
            jsonio.dumps(adapter(target).encode_response(response, None))
        except ProtocolError:
            continue


def _events(wire: Wire) -> st.SearchStrategy[list[SSEEvent]]:
    recorded = [stream_events(path) for path in seeds(wire, "stream")]
    return st.sampled_from(recorded)


def _is_json(data: str) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


@st.composite
def _broken_stream(draw: st.DrawFn, wire: Wire) -> list[SSEEvent]:
    """A recorded stream with events mutated, dropped, repeated or cut short."""
    events = list(draw(_events(wire)))
    for _ in range(draw(st.integers(1, 3))):
        index = draw(st.integers(0, len(events) - 1))
        event = events[index]
        action = draw(st.sampled_from(["mutate", "mutate", "drop", "repeat", "cut", "garble"]))
        if action == "mutate" and _is_json(event.data):
            mutant = draw(mutants(json.loads(event.data)))
            events[index] = SSEEvent(json.dumps(mutant), event.event, event.id)
        elif action == "drop" and len(events) > 1:
            del events[index]
        elif action == "repeat":
            events.insert(index, event)
        elif action == "cut":
            events = events[: index + 1]
        else:
            events[index] = SSEEvent(event.data[: draw(st.integers(0, 20))], event.event)
    return events


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.value)
@FUZZ
@given(data=st.data())
def test_stream_decoders(wire: Wire, data: st.DataObject) -> None:
    """A decoder refuses a broken event with a ``ProtocolError`` (or a ``ValueError``, as
    ``EventReader`` documents); the events it gave, translated to any wire, encode."""
    _stream_through(wire, data.draw(_broken_stream(wire)))


def _stream_through(wire: Wire, events: list[SSEEvent]) -> None:
    """Decode ``events`` as a stream of ``wire``, then encode what came out for every wire."""
    decoder = adapter(wire).stream_decoder()
    out = []
    try:
        for event in events:
            out += decoder.feed(event)
        out += decoder.close()
    except (ProtocolError, ValueError):
        pass
    for target in WIRES:
        encoder = adapter(target).stream_encoder(None)
        try:
            for canonical in out:
                encoder.encode(canonical)
            encoder.close()
        except ProtocolError:
            continue


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.value)
@FUZZ
@given(data=st.data(), status=st.sampled_from([400, 401, 404, 413, 429, 500, 502, 503, 529]))
def test_error_decoders_always_read_a_kind_and_a_message(
    wire: Wire, data: st.DataObject, status: int
) -> None:
    seed = _seed_docs(wire, "error")
    body = data.draw(seed.flatmap(mutants) | seed | st.none())
    kind, message = adapter(wire).decode_error(status, body)
    assert isinstance(kind, ErrorKind) and isinstance(message, str)


CRASHES = sorted(CORPUS.glob("*/crash-*"))


@pytest.mark.parametrize("path", CRASHES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_inputs_that_once_crashed_a_decoder_are_refused_or_read(path: Path) -> None:
    """The corpus keeps every input the fuzzers found crashing a decoder (named
    ``crash-<decoder>-<what>``); each must now be read or refused with a ProtocolError."""
    codec = adapter(Wire(path.parent.name))
    decoder = path.name.split("-")[1]
    try:
        if decoder == "request":
            _translate(codec.decode_request(load(path)))
        elif decoder == "response":
            codec.decode_response(load(path))
        else:
            _stream_through(codec.wire, stream_events(path))
    except ProtocolError:
        pass
