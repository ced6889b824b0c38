"""Wire protocol adapters: each wire's requests, responses, stream events and error bodies to
and from the canonical model. Pure: no sockets, no disk, no clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from skillstate.conversation import ErrorKind, Event, Json, Request, Response, Wire
from skillstate.protocols.sse import SSEEvent

if TYPE_CHECKING:
    from skillstate.protocols.memo import ItemMemo

#: The canonical error kinds; each adapter names them in its own wire's words.
ERROR_KINDS = tuple(ErrorKind)


class StreamDecoder(Protocol):
    """One wire's SSE events in, canonical events out (stateful, one per stream).
    ``ended_short``: the wire's end-of-stream marker came before the answer was whole (Chat's
    ``[DONE]`` with no ``finish_reason`` before it); the stream is cut, and was found so at
    that marker, before the bytes after it."""

    @property
    def ended_short(self) -> bool: ...

    def feed(self, event: SSEEvent) -> list[Event]: ...

    def close(self) -> list[Event]: ...


class StreamEncoder(Protocol):
    """Canonical events in, one wire's SSE bytes out (stateful, one per stream)."""

    def encode(self, event: Event) -> bytes: ...

    def close(self) -> bytes: ...


class RequestDecoder(Protocol):
    """A wire's request body to a canonical ``Request``; ``memo`` holds the session's
    previous messages, so those the client re-sent are not decoded again
    (``protocols.memo``)."""

    def __call__(self, body: Json, memo: ItemMemo | None = None) -> Request: ...


def _as_is(request: Request) -> Request:
    return request


@dataclass(frozen=True, slots=True)
class Adapter:
    """Everything the server needs to speak one wire.

    ``encode_response`` and ``stream_encoder`` take the request the client sent (decoded from
    this adapter's wire, or None) so the reply can echo what that wire echoes and map tool
    kinds back. ``error_body(status, kind, message)`` builds this wire's error JSON;
    ``decode_error(status, body)`` reads a foreign error body into (kind, message).

    ``response_id(token)`` is the id of a response the gateway writes itself, in this wire's
    id shape (``token`` makes it unique). ``for_upstream(request)`` is the request as the
    gateway sends it upstream when it reads the reply itself (a state round): whatever this
    wire must be asked for so the reply can be accounted (the Chat wire's stream usage).

    ``usage_required``: this wire's reply must carry a usage (Anthropic Messages: the body's
    ``usage``, the stream's ``message_delta.usage``). Where the upstream reported none, the
    round loop gives the encoder the gateway's own count of the rounds (an estimate, which
    the ledger records as one) rather than zeros; the other wires leave usage out (or null)."""

    wire: Wire
    path: str
    decode_request: RequestDecoder
    encode_request: Callable[[Request], Json]
    decode_response: Callable[[Json], Response]
    encode_response: Callable[[Response, Request | None], Json]
    stream_decoder: Callable[[], StreamDecoder]
    stream_encoder: Callable[[Request | None], StreamEncoder]
    error_body: Callable[[int, ErrorKind, str], Json]
    decode_error: Callable[[int, Json | None], tuple[ErrorKind, str]]
    response_id: Callable[[str], str]
    for_upstream: Callable[[Request], Request] = _as_is
    history_key: str = "messages"
    usage_required: bool = False


def adapter(wire: Wire) -> Adapter:
    """The adapter for ``wire`` (imported on first use, so nothing happens at import time;
    kept after it, since every request asks)."""
    found = _ADAPTERS.get(wire)
    if found is None:
        found = _ADAPTERS[wire] = _import(wire)
    return found


_ADAPTERS: dict[Wire, Adapter] = {}


def _import(wire: Wire) -> Adapter:
    if wire is Wire.CHAT:
        from skillstate.protocols.openai_chat import ADAPTER as chat

        return chat
    if wire is Wire.RESPONSES:
        from skillstate.protocols.openai_responses import ADAPTER as responses

        return responses
    from skillstate.protocols.anthropic_messages import ADAPTER as messages

    return messages


_STATUS_KINDS = {
    400: ErrorKind.INVALID_REQUEST,
    401: ErrorKind.AUTHENTICATION,
    403: ErrorKind.PERMISSION,
    404: ErrorKind.NOT_FOUND,
    413: ErrorKind.TOO_LARGE,
    429: ErrorKind.RATE_LIMIT,
    503: ErrorKind.OVERLOADED,
    504: ErrorKind.TIMEOUT,
    529: ErrorKind.OVERLOADED,
}


def kind_for_status(status: int) -> ErrorKind:
    """The canonical error kind an HTTP status implies."""
    kind = _STATUS_KINDS.get(status)
    if kind is not None:
        return kind
    return ErrorKind.INVALID_REQUEST if 400 <= status < 500 else ErrorKind.UPSTREAM


__all__ = [
    "ERROR_KINDS",
    "Adapter",
    "SSEEvent",
    "StreamDecoder",
    "StreamEncoder",
    "adapter",
    "kind_for_status",
]
