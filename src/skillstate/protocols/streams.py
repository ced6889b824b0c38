"""Reading SSE streams into canonical events, sans I/O.

``EventReader`` turns one wire's stream bytes into canonical events, chunk by chunk, never
waiting for more input than one SSE event. ``StreamObserver`` sees the bytes the client is
getting (after they were sent) and rebuilds the canonical response. Translating a stream is
reading it here and encoding the events with another wire's ``StreamEncoder``.
"""

from __future__ import annotations

from collections.abc import Callable

from skillstate.conversation import Accumulator, Event, Response, Wire
from skillstate.protocols import StreamDecoder, adapter
from skillstate.protocols.sse import SSEDecoder


class EventReader:
    """``wire`` stream bytes in, canonical events out. A wire's decoder raises
    ``ProtocolError`` (or ``ValueError``) on an event it cannot read."""

    __slots__ = ("_decoder", "_sse")

    def __init__(self, wire: Wire) -> None:
        self._sse = SSEDecoder()
        self._decoder: StreamDecoder = adapter(wire).stream_decoder()

    def feed(self, chunk: bytes) -> list[Event]:
        out: list[Event] = []
        for sse in self._sse.feed(chunk):
            out += self._decoder.feed(sse)
        return out

    def close(self) -> list[Event]:
        out: list[Event] = []
        for sse in self._sse.close():
            out += self._decoder.feed(sse)
        return out + self._decoder.close()


class StreamObserver:
    """Rebuilds the canonical response from a stream of ``wire``. A decoding failure turns the
    observer off (``broken`` holds why) and never disturbs the relay."""

    __slots__ = ("_accumulator", "_reader", "broken", "cut")

    def __init__(self, wire: Wire) -> None:
        self._reader = EventReader(wire)
        self._accumulator = Accumulator(wire)
        self.broken: str | None = None
        self.cut = False
        """After ``close``: the stream began but ended neither with its finish nor with an
        error event of its own (a truncated stream, which must not read as complete)."""

    def feed(self, chunk: bytes) -> None:
        if self.broken is None:
            self._take(lambda: self._reader.feed(chunk))

    def close(self) -> Response | None:
        if self.broken is None:
            accumulator = self._accumulator
            ended = accumulator.finished or accumulator.failure is not None
            self._take(self._reader.close)
            began = accumulator.started
            self.cut = began and not ended
        return None if self.broken is not None else self._accumulator.response()

    def _take(self, read: Callable[[], list[Event]]) -> None:
        try:
            for event in read():
                self._accumulator.add(event)
        except Exception as exc:  # the relay must go on whatever the observer makes of it
            self.broken = f"{type(exc).__name__}: {exc}"
