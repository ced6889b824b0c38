"""Reading SSE streams into canonical events, sans I/O.

``EventReader`` turns one wire's stream bytes into canonical events, chunk by chunk, never
waiting for more input than one SSE event, and tells at the end whether the stream was whole.
``StreamObserver`` sees the bytes the client is getting (after they were sent) and rebuilds the
canonical response. Translating a stream is reading it here and encoding the events with
another wire's ``StreamEncoder``.
"""

from __future__ import annotations

from collections.abc import Callable

from skillstate.conversation import Accumulator, Event, Failure, Finish, Response, Wire
from skillstate.protocols import StreamDecoder, adapter
from skillstate.protocols.sse import SSEDecoder


class EventReader:
    """``wire`` stream bytes in, canonical events out. A wire's decoder raises
    ``ProtocolError`` (or ``ValueError``) on an event it cannot read.

    The completeness contract: a stream is whole only when its wire said it ended, that is
    when its decoder gave a ``Finish`` or a ``Failure`` read from the stream itself (Chat: a
    ``finish_reason`` and ``[DONE]``; Responses: ``response.completed``, ``.incomplete`` or
    ``.failed``, or an ``error`` event; Anthropic: ``message_stop`` or an ``error`` event).
    The one lenience is the decoder's own: a Chat stream that gave its ``finish_reason`` and
    then closed without ``[DONE]`` is finished at ``close`` (some servers leave it out). Any
    other end, an empty stream and a ``[DONE]`` with no ``finish_reason`` before it included,
    is a cut (``cut`` is True after ``close``); the ``Failure`` a decoder makes up at
    ``close`` for it is not the upstream's word. ``ended_short`` tells, as soon as the end
    marker is read, that the stream ends cut (``StreamDecoder.ended_short``)."""

    __slots__ = ("_decoder", "_ended", "_sse", "cut")

    def __init__(self, wire: Wire) -> None:
        self._sse = SSEDecoder()
        self._decoder: StreamDecoder = adapter(wire).stream_decoder()
        self._ended = False
        self.cut = False

    @property
    def ended_short(self) -> bool:
        return self._decoder.ended_short

    def feed(self, chunk: bytes) -> list[Event]:
        out: list[Event] = []
        for sse in self._sse.feed(chunk):
            out += self._decoder.feed(sse)
        self._ended = self._ended or _ends(out)
        return out

    def close(self) -> list[Event]:
        out: list[Event] = []
        for sse in self._sse.close():
            out += self._decoder.feed(sse)
        ended = self._ended or _ends(out)
        tail = self._decoder.close()
        if self._decoder.ended_short:
            ended = False
        self.cut = not ended and not any(isinstance(event, Finish) for event in tail)
        return out + tail


def _ends(events: list[Event]) -> bool:
    return any(isinstance(event, Finish | Failure) for event in events)


class StreamObserver:
    """Rebuilds the canonical response from a stream of ``wire``. A decoding failure turns the
    observer off (``broken`` holds why) and never disturbs the relay while it lasts; at the
    end such a stream is not known to be whole, so it counts as cut."""

    __slots__ = ("_accumulator", "_reader", "broken", "cut")

    def __init__(self, wire: Wire) -> None:
        self._reader = EventReader(wire)
        self._accumulator = Accumulator(wire)
        self.broken: str | None = None
        self.cut = False
        """After ``close``: the stream ended neither with its finish nor with an error event
        of its own, or could not be read to its end (``EventReader``'s contract): a truncated
        stream, which must not read as complete."""

    @property
    def ended_short(self) -> bool:
        """The stream's end marker came before the answer was whole (``EventReader``)."""
        return self.broken is None and self._reader.ended_short

    def feed(self, chunk: bytes) -> None:
        if self.broken is None:
            self._take(lambda: self._reader.feed(chunk))

    def close(self) -> Response | None:
        if self.broken is None:
            self._take(self._reader.close)
        self.cut = self.broken is not None or self._reader.cut
        return None if self.broken is not None else self._accumulator.response()

    def _take(self, read: Callable[[], list[Event]]) -> None:
        try:
            for event in read():
                self._accumulator.add(event)
        except Exception as exc:  # the relay must go on whatever the observer makes of it
            self.broken = f"{type(exc).__name__}: {exc}"
