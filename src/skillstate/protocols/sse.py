"""Server-sent events, sans I/O: an incremental decoder over bytes and an encoder.

Follows the WHATWG HTML "event stream" parsing rules
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
lines end in CRLF, LF or CR; a blank line dispatches the event; lines starting with ':' are
comments; ``data`` lines are joined with LF; one leading space after the colon is dropped.
The decoder accepts arbitrary chunk boundaries, including a CRLF split across two chunks.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class SSEEvent:
    data: str
    event: str | None = None
    id: str | None = None


class SSEDecoder:
    """Feed raw bytes as they arrive; get back the events they complete."""

    __slots__ = ("_buffer", "_data", "_event", "_id", "_skip_lf")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._skip_lf = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        buffer = self._buffer + chunk if self._buffer else chunk
        events: list[SSEEvent] = []
        if b"\r" not in buffer:  # lines end in LF alone, as most servers write them
            lines = buffer.split(b"\n")
            self._buffer = lines.pop()  # what follows the last LF: a line not yet whole
            for line in lines:
                self._line(line, events)
            return events
        start = 0
        size = len(buffer)
        while start < size:
            lf = buffer.find(b"\n", start)
            cr = buffer.find(b"\r", start, lf if lf >= 0 else size)
            if cr >= 0:
                end, nxt = cr, cr + 1
                if nxt < size:
                    if buffer[nxt : nxt + 1] == b"\n":
                        nxt += 1
                else:
                    self._skip_lf = True
            elif lf >= 0:
                end, nxt = lf, lf + 1
            else:
                break
            self._line(buffer[start:end], events)
            start = nxt
        self._buffer = buffer[start:]
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: a final event without its blank line is discarded per the spec,
        but a dangling unterminated line is still read first (lenient toward servers that
        end the stream without a newline)."""
        events: list[SSEEvent] = []
        if self._buffer:
            self._line(self._buffer, events)
            self._buffer = b""
            self._line(b"", events)
        return events

    def _line(self, raw: bytes, events: list[SSEEvent]) -> None:
        if not raw:
            if self._data or self._event is not None:
                events.append(SSEEvent("\n".join(self._data), self._event, self._id))
            self._data = []
            self._event = None
            return
        if raw[:5] == b"data:":  # the usual line: its name needs no decoding
            rest = raw[6:] if raw[5:6] == b" " else raw[5:]
            self._data.append(rest.decode("utf-8", errors="replace"))
            return
        if raw[:1] == b":":
            return
        line = raw.decode("utf-8", errors="replace")
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value


def encode_event(data: str, event: str | None = None) -> bytes:
    """One SSE event. ``data`` must not hold a newline (JSON from a compact dumps never does)."""
    if event is None:
        return b"data: " + data.encode() + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + data.encode() + b"\n\n"
