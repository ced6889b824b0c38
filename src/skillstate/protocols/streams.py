"""Watching and translating SSE streams, sans I/O.

``StreamObserver`` sees the bytes the client is getting (after they were sent) and rebuilds the
canonical response. ``StreamTranslator`` turns one wire's stream into another's chunk by chunk,
never waiting for more input than one SSE event. Both are fed raw bytes as they arrive.
"""

from __future__ import annotations

from skillstate.conversation import (
    Accumulator,
    ErrorKind,
    Event,
    Failure,
    PartStart,
    Request,
    Response,
    ToolCall,
    Wire,
)
from skillstate.protocols import StreamDecoder, adapter
from skillstate.protocols.portable import namespace_map, restore_namespace
from skillstate.protocols.sse import SSEDecoder


class StreamObserver:
    """Rebuilds the canonical response from a stream of ``wire``. A decoding failure turns the
    observer off (``broken`` holds why) and never disturbs the relay."""

    __slots__ = ("_accumulator", "_decoder", "_sse", "broken")

    def __init__(self, wire: Wire) -> None:
        self._sse = SSEDecoder()
        self._decoder: StreamDecoder = adapter(wire).stream_decoder()
        self._accumulator = Accumulator(wire)
        self.broken: str | None = None

    def feed(self, chunk: bytes) -> None:
        if self.broken is not None:
            return
        try:
            for sse in self._sse.feed(chunk):
                for event in self._decoder.feed(sse):
                    self._accumulator.add(event)
        except Exception as exc:  # the relay must go on whatever the observer makes of it
            self.broken = f"{type(exc).__name__}: {exc}"

    def close(self) -> Response | None:
        if self.broken is None:
            try:
                for sse in self._sse.close():
                    for event in self._decoder.feed(sse):
                        self._accumulator.add(event)
                for event in self._decoder.close():
                    self._accumulator.add(event)
            except Exception as exc:
                self.broken = f"{type(exc).__name__}: {exc}"
        if self.broken is not None:
            return None
        return self._accumulator.response()


class StreamTranslator:
    """``source`` wire bytes in, ``target`` wire bytes out; also accumulates the response."""

    __slots__ = ("_accumulator", "_decoder", "_encoder", "_names", "_sse")

    def __init__(self, source: Wire, target: Wire, request: Request | None) -> None:
        self._sse = SSEDecoder()
        self._decoder = adapter(source).stream_decoder()
        self._encoder = adapter(target).stream_encoder(request)
        self._accumulator = Accumulator(source)
        self._names = namespace_map(request) if request is not None else {}

    def feed(self, chunk: bytes) -> bytes:
        out = bytearray()
        for sse in self._sse.feed(chunk):
            for event in self._decoder.feed(sse):
                out += self._pass(event)
        return bytes(out)

    def _pass(self, event: Event) -> bytes:
        if self._names and isinstance(event, PartStart) and isinstance(event.part, ToolCall):
            event = PartStart(event.index, restore_namespace(event.part, self._names))
        self._accumulator.add(event)
        return self._encoder.encode(event)

    def fail(self, message: str) -> bytes:
        """The upstream went away mid-stream: tell the client in its own wire."""
        event = Failure(message=message, kind=ErrorKind.UPSTREAM, status=502)
        self._accumulator.add(event)
        return self._encoder.encode(event) + self._encoder.close()

    def close(self) -> bytes:
        out = bytearray()
        for sse in self._sse.close():
            for event in self._decoder.feed(sse):
                out += self._pass(event)
        for event in self._decoder.close():
            out += self._pass(event)
        out += self._encoder.close()
        return bytes(out)

    def response(self) -> Response:
        return self._accumulator.response()
