"""The client's side of a streamed reply: the one place an SSE response is opened.

It opens on the first bytes (so an upstream that refuses before anything was said is still
answered with a real HTTP error), encodes canonical events in the client's wire, restores
namespaced tool names, and always ends cleanly: a failure after the first byte is the client
wire's own error event, then the end of the stream, never a second HTTP response.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from typing import TypeVar

from aiohttp import web

from skillstate.conversation import (
    ErrorKind,
    Event,
    Failure,
    PartStart,
    Request,
    Start,
    ToolCall,
    Wire,
)
from skillstate.protocols import StreamEncoder, adapter
from skillstate.protocols.portable import namespace_map, restore_namespace

PREPARED: web.RequestKey[web.StreamResponse] = web.RequestKey("prepared", web.StreamResponse)
"""Request key set once a response was prepared: the error middleware must not start another."""
SINK: web.RequestKey[web.StreamResponse] = web.RequestKey("sink", web.StreamResponse)
"""Request key of a request that came as a WebSocket frame (``server.socket_route``): the
stream its reply is written to, in place of an HTTP response."""


class Framing:
    """How many requests are being served as WebSocket frames now: only while some are does a
    request look for its ``SINK`` or its framed body (a request key that is not there costs
    a ``KeyError`` to look for)."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0


FRAMING = Framing()

T = TypeVar("T")


class ClientGone(ConnectionResetError):
    """The client closed its connection while its stream was being written. Not an
    ``aiohttp.ClientError``, so nothing takes it for the upstream's failure; the error
    middleware logs it as one debug line."""


async def _to_client(write: Awaitable[T]) -> T:
    try:
        return await write
    except ConnectionError as exc:  # aiohttp: "Cannot write to closing transport"
        raise ClientGone(str(exc)) from exc


class ClientStream:
    __slots__ = ("_encoder", "_http", "_names", "headers", "out")

    def __init__(
        self, http: web.Request, wire: Wire, request: Request | None, headers: dict[str, str]
    ) -> None:
        self._http = http
        self._encoder: StreamEncoder = adapter(wire).stream_encoder(request)
        self._names = namespace_map(request) if request is not None else {}
        self.headers = headers
        self.out: web.StreamResponse | None = None

    @property
    def opened(self) -> bool:
        return self.out is not None

    async def write(self, data: bytes) -> None:
        if not data:
            return
        if self.out is None:
            self.out = await _to_client(open_stream(self._http, self.headers))
        await _to_client(self.out.write(data))

    async def send(self, events: Iterable[Event]) -> None:
        await self.write(b"".join(self._encoder.encode(self._restored(e)) for e in events))

    async def fail(
        self, status: int, kind: ErrorKind, message: str, *, relayed: bool = False
    ) -> web.StreamResponse:
        """End the stream with the client wire's error event. ``relayed``: what went before was
        the upstream's own bytes, which opened the stream already, so the encoder adds nothing
        but its error event."""
        if relayed:
            self._encoder.encode(Start(id="", model=""))  # the opening the client already has
        failure = Failure(message=message, kind=kind, status=status)
        await self.write(self._encoder.encode(failure) + self._encoder.close())
        return await self.end()

    async def end(self) -> web.StreamResponse:
        await self.write(self._encoder.close())
        if self.out is None:  # the upstream said nothing: still a well-formed, empty stream
            self.out = await _to_client(open_stream(self._http, self.headers))
        await _to_client(self.out.write_eof())
        return self.out

    def _restored(self, event: Event) -> Event:
        if self._names and isinstance(event, PartStart) and isinstance(event.part, ToolCall):
            return PartStart(event.index, restore_namespace(event.part, self._names))
        return event


async def open_stream(http: web.Request, headers: dict[str, str]) -> web.StreamResponse:
    """The SSE response of ``http``, prepared (its ``SINK`` where it came as a frame)."""
    out = http.get(SINK) if FRAMING.now else None
    if out is None:
        out = web.StreamResponse(status=200, headers=headers)
        out.content_type = "text/event-stream"
        out.headers["cache-control"] = "no-cache"
    await out.prepare(http)
    http[PREPARED] = out
    return out
