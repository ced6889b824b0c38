"""Wire protocol adapters: each wire's requests, responses, stream events and error bodies to
and from the canonical model. Pure: no sockets, no disk, no clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from skillstate.conversation import Event, Json, Request, Response, Wire
from skillstate.protocols.sse import SSEEvent

#: Canonical error kinds; each adapter names them in its own wire's words.
ERROR_KINDS = (
    "invalid_request_error",
    "authentication_error",
    "permission_error",
    "not_found_error",
    "request_too_large",
    "rate_limit_error",
    "api_error",
    "overloaded_error",
)


class StreamDecoder(Protocol):
    """One wire's SSE events in, canonical events out (stateful, one per stream)."""

    def feed(self, event: SSEEvent) -> list[Event]: ...

    def close(self) -> list[Event]: ...


class StreamEncoder(Protocol):
    """Canonical events in, one wire's SSE bytes out (stateful, one per stream)."""

    def encode(self, event: Event) -> bytes: ...

    def close(self) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Adapter:
    """Everything the server needs to speak one wire.

    ``encode_response`` and ``stream_encoder`` take the request the client sent (decoded from
    this adapter's wire, or None) so the reply can echo what that wire echoes and map tool
    kinds back. ``error_body(status, kind, message)`` builds this wire's error JSON;
    ``decode_error(status, body)`` reads a foreign error body into (kind, message)."""

    wire: Wire
    path: str
    decode_request: Callable[[Json], Request]
    encode_request: Callable[[Request], Json]
    decode_response: Callable[[Json], Response]
    encode_response: Callable[[Response, Request | None], Json]
    stream_decoder: Callable[[], StreamDecoder]
    stream_encoder: Callable[[Request | None], StreamEncoder]
    error_body: Callable[[int, str, str], Json]
    decode_error: Callable[[int, Json | None], tuple[str, str]]


def adapter(wire: Wire) -> Adapter:
    """The adapter for ``wire`` (imported on first use, so nothing happens at import time)."""
    if wire is Wire.CHAT:
        from skillstate.protocols.openai_chat import ADAPTER as chat

        return chat
    if wire is Wire.RESPONSES:
        from skillstate.protocols.openai_responses import ADAPTER as responses

        return responses
    from skillstate.protocols.anthropic_messages import ADAPTER as messages

    return messages


def kind_for_status(status: int) -> str:
    """The canonical error kind an HTTP status implies."""
    return {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        529: "overloaded_error",
        503: "overloaded_error",
    }.get(status, "invalid_request_error" if 400 <= status < 500 else "api_error")


__all__ = [
    "ERROR_KINDS",
    "Adapter",
    "SSEEvent",
    "StreamDecoder",
    "StreamEncoder",
    "adapter",
    "kind_for_status",
]
