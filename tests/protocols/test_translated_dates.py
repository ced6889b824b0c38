"""Replies translated from a wire that gives no creation time (Anthropic Messages) are dated
with the time the client's request was received (``Request.received``, set by the server)."""

from __future__ import annotations

from skillstate.conversation import (
    Event,
    Finish,
    Message,
    PartEnd,
    PartStart,
    Request,
    Response,
    Start,
    StopReason,
    Text,
    Usage,
    Wire,
)
from skillstate.protocols import adapter
from skillstate.protocols.sse import SSEDecoder
from skillstate.support.jsonio import loads

RECEIVED = 1_764_000_123


def _request(wire: Wire, received: int | None = RECEIVED) -> Request:
    return Request("m", [Message("user", [Text("hi")])], wire, received=received)


def _reply(source: Wire, created: int | None = None) -> Response:
    message = Message("assistant", [Text("hello")])
    return Response("msg_1", "claude", message, source, usage=Usage(3, 1), created=created)


def _events(created: int | None = None) -> list[Event]:
    return [
        Start("msg_1", "claude", Wire.MESSAGES, created=created),
        PartStart(0, Text("hello")),
        PartEnd(0),
        Finish(StopReason.END, Usage(3, 1)),
    ]


def _streamed(wire: Wire, request: Request | None, events: list[Event]) -> list[dict[str, object]]:
    encoder = adapter(wire).stream_encoder(request)
    raw = b"".join(encoder.encode(event) for event in events) + encoder.close()
    sse = SSEDecoder()
    found = [*sse.feed(raw), *sse.close()]
    return [loads(e.data) for e in found if e.data != "[DONE]"]


def test_a_chat_reply_from_anthropic_is_dated_when_the_request_came() -> None:
    body = adapter(Wire.CHAT).encode_response(_reply(Wire.MESSAGES), _request(Wire.CHAT))
    assert body["created"] == RECEIVED


def test_a_chat_stream_from_anthropic_is_dated_when_the_request_came() -> None:
    chunks = _streamed(Wire.CHAT, _request(Wire.CHAT), _events())
    assert chunks and {chunk["created"] for chunk in chunks} == {RECEIVED}


def test_a_responses_reply_from_anthropic_is_dated_when_the_request_came() -> None:
    request = _request(Wire.RESPONSES)
    body = adapter(Wire.RESPONSES).encode_response(_reply(Wire.MESSAGES), request)
    assert body["created_at"] == RECEIVED


def test_a_responses_stream_from_anthropic_is_dated_when_the_request_came() -> None:
    events = _streamed(Wire.RESPONSES, _request(Wire.RESPONSES), _events())
    dated = [e["response"]["created_at"] for e in events if isinstance(e.get("response"), dict)]
    assert len(dated) == 3 and set(dated) == {RECEIVED}  # created, in_progress, completed


def test_a_creation_time_of_the_upstream_wins() -> None:
    """A reply that has its own time (a Chat upstream's ``created``) keeps it."""
    chat = adapter(Wire.CHAT).encode_response(_reply(Wire.RESPONSES, 42), _request(Wire.CHAT))
    assert chat["created"] == 42
    responses = _streamed(Wire.RESPONSES, _request(Wire.RESPONSES), _events(created=42))
    assert responses[0]["response"]["created_at"] == 42  # type: ignore[index]


def test_without_a_request_time_the_date_is_zero() -> None:
    """A request no server received (a test building one by hand) gives no time to use."""
    bare = _request(Wire.CHAT, received=None)
    assert adapter(Wire.CHAT).encode_response(_reply(Wire.MESSAGES), bare)["created"] == 0
    assert _streamed(Wire.CHAT, None, _events())[0]["created"] == 0
