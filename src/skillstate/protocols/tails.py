"""What a reply relayed untouched says, read without decoding it: the express relay's watch.

The byte pass-through of a request no lane changed (``server.express``) sends the upstream's
bytes on as they come and needs three things of them, each cheaper than decoding the reply:

* **Whether a stream is whole** (``StreamTail``): the same completeness contract as
  ``streams.EventReader``'s, told by the markers a wire's terminal events carry, found by a
  regular expression over each chunk (and the bytes where two chunks meet). Chat: a
  ``finish_reason`` with a value, then ``[DONE]`` or the end (``[DONE]`` before any is
  ``ended_short``); Responses: ``response.completed``, ``.incomplete`` or ``.failed``;
  Anthropic: ``message_delta`` or ``message_stop``; on every wire an error event. A marker
  inside a text or an argument cannot match: JSON escapes the quotes around it there.
* **Whether a JSON reply is whole** (``json_reply``): it parses as an object of the wire's
  reply shape; else the relay tries it again, as it would a reply cut short.
* **Its usage and model** (``TailReply``), read after the client has the reply (the recorder
  does it, off the request path): a JSON reply's ``usage``; a stream's last events that hold
  one (Chat's usage chunk, Responses' terminal event), or for Anthropic its first event and
  its last ``message_delta``. None where the reply reported none: the ledger then counts the
  reply itself (``economics.metered``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from skillstate.conversation import ProtocolError, Usage, Wire
from skillstate.protocols.streams import EventReader
from skillstate.support import jsonio

_OVERLAP = 96
"""Bytes before a chunk scanned again with it (of however many chunks they came in): longer
than any marker, so a marker split across chunks is still found."""

_ERROR = rb'(?:event: ?error\r?\n|"type"\s*:\s*"error")'
_TERMINAL: dict[Wire, re.Pattern[bytes]] = {
    Wire.CHAT: re.compile(rb'"finish_reason"\s*:\s*"|"error"\s*:\s*\{'),
    Wire.RESPONSES: re.compile(
        rb'"type"\s*:\s*"response\.(?:completed|incomplete|failed)"|' + _ERROR
    ),
    Wire.MESSAGES: re.compile(
        rb'(?:event: ?|"type"\s*:\s*")(?:message_delta|message_stop)\b|' + _ERROR
    ),
}
_DONE = re.compile(rb"(?:^|[\r\n])data: ?\[DONE\]")
_HINTS: dict[Wire, tuple[bytes, ...]] = {
    Wire.CHAT: (),
    Wire.RESPONSES: (b"completed", b"incomplete", b"failed", b"error"),
    Wire.MESSAGES: (b"message_delta", b"message_stop", b"error"),
}
"""Words every terminal marker of a wire holds one of: a chunk with none of them is not
searched (the patterns that begin with alternatives try a match at every byte, ten times the
cost of looking for a word; Chat's begins with a quote and needs no hint)."""
_SHAPE = {Wire.CHAT: "choices", Wire.RESPONSES: "output", Wire.MESSAGES: "content"}
"""The list each wire's reply object holds: a JSON body without it is not a reply."""


class StreamTail:
    """A relayed stream of ``wire``, watched chunk by chunk; its chunks kept for the usage
    (``reply``), read later. ``ended_short``: Chat's ``[DONE]`` came before any finish reason
    (found at that chunk); ``cut`` (after ``close``): the stream did not end in its wire's
    way, or was empty.

    The markers only say where to look: at ``close`` the events from the one that holds the
    first marker on are read by the wire's own decoder (``streams.EventReader``), so a
    terminal event cut in half, or an error event that does not parse, counts as the decoder
    counts it. That is the end of the stream only, whatever its length."""

    __slots__ = (
        "_before",
        "_done",
        "_hints",
        "_marked",
        "_terminal",
        "chunks",
        "cut",
        "ended_short",
        "wire",
    )

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.chunks: list[bytes] = []
        self._terminal = _TERMINAL[wire]
        self._hints = _HINTS[wire]
        self._marked = -1
        """The chunk in which the first terminal marker ended (-1: none yet)."""
        self._before = b""
        """The last ``_OVERLAP`` bytes fed so far."""
        self._done = False
        self.ended_short = False
        self.cut = False

    def feed(self, chunk: bytes) -> None:
        chunks = self.chunks
        seam = self._before + chunk
        self._before = seam[-_OVERLAP:]
        chunks.append(chunk)
        if self._marked < 0 and self._marks(seam):
            self._marked = len(chunks) - 1
        if (
            self.wire is Wire.CHAT
            and not self._done
            and b"[DONE]" in seam
            and _DONE.search(seam) is not None
        ):
            self._done = True
            self.ended_short = self._marked < 0

    def _marks(self, seam: bytes) -> bool:
        """Whether ``seam`` holds a terminal marker of the wire."""
        hints = self._hints
        if hints and not any(hint in seam for hint in hints):
            return False
        return self._terminal.search(seam) is not None

    def close(self) -> TailReply:
        self.cut = self.ended_short or self._marked < 0 or self._read_end().cut
        return TailReply(self.wire, self.chunks, streamed=True)

    def _read_end(self) -> EventReader:
        """The wire's decoder over the stream's end: from the event the first marker is in."""
        first, back = self._marked, 0
        while first > 0 and back < _OVERLAP:  # the marker may begin in the chunks before
            first -= 1
            back += len(self.chunks[first])
        end = b"".join(self.chunks[first:])
        start = self._event_start(end)
        if start is None:  # that event began in an earlier chunk still
            end = b"".join(self.chunks)
            start = self._event_start(end) or 0
        reader = EventReader(self.wire)
        reader.feed(end[start:])
        reader.close()
        return reader

    def _event_start(self, data: bytes) -> int | None:
        """Where the event that holds the first marker in ``data`` begins: just after the
        blank line before it (None: there is none in ``data``)."""
        found = self._terminal.search(data)
        at = found.start() if found is not None else len(data)
        ends = [data.rfind(gap, 0, at) + len(gap) for gap in _GAPS if data.rfind(gap, 0, at) >= 0]
        return max(ends, default=None)


_GAPS = (b"\n\n", b"\r\r", b"\n\r\n")
"""The blank lines that end an SSE event, as they end (``\r\n\r\n`` ends in the last)."""


def json_reply(wire: Wire, raw: bytes) -> TailReply:
    """``raw`` as a whole JSON reply of ``wire``; ``ValueError`` saying why it is not one."""
    parsed = jsonio.loads(raw)
    key = _SHAPE[wire]
    if not isinstance(parsed, dict) or not isinstance(parsed.get(key), list):
        raise ValueError(f"not a {wire.value} reply: no {key!r} list")
    return TailReply(wire, [raw], streamed=False, parsed=parsed)


@dataclass(slots=True)
class TailReply:
    """A relayed reply's bytes, read for its usage and model only when asked."""

    wire: Wire
    chunks: list[bytes]
    """The reply's bytes as they came (a JSON body in one)."""
    streamed: bool
    parsed: dict[str, Any] | None = None

    @property
    def raw(self) -> bytes:
        return b"".join(self.chunks)

    def usage(self) -> tuple[Usage | None, str]:
        """The usage the reply reported (None: none) and the model it names (``""``)."""
        if not self.streamed:
            body = self.parsed if self.parsed is not None else _object(self.raw)
            return _usage_of(self.wire, body.get("usage")), _model(body)
        raw = self.raw
        if self.wire is Wire.MESSAGES:
            return _messages_stream(raw)
        events = _data_lines(raw)
        bodies = [self._body(data) for data in reversed(events[-8:])]
        for body in bodies:
            if isinstance(body.get("usage"), dict):
                return _usage_of(self.wire, body["usage"]), _model(body)
        bodies += [self._body(data) for data in events[:2]]
        return None, next((m for m in map(_model, bodies) if m), "")

    def chat_text(self) -> tuple[str, str] | None:
        """A Chat stream whose first choice said nothing but text: that text and the model
        its first chunk names, as the wire's decoder would rebuild them (``_chat_text``);
        None for any other reply, which only the decoder reads right."""
        if not self.streamed or self.wire is not Wire.CHAT:
            return None
        return _chat_text(_data_lines(self.raw))

    def _body(self, data: bytes) -> dict[str, Any]:
        """The object an event's data holds the reply's fields in (Responses: its
        ``response``)."""
        found = _object(data)
        if self.wire is not Wire.RESPONSES:
            return found
        inner = found.get("response")
        return inner if isinstance(inner, dict) else {}


def _chat_text(events: list[bytes]) -> tuple[str, str] | None:
    """The text and model of a Chat stream's ``data:`` payloads, read as
    ``ChatStreamDecoder`` reads them (the text its first choice's ``content`` deltas make,
    up to ``[DONE]``; the model of its first chunk), where that is all it holds: None where
    any payload is not an object (a multi-line one read by its lines), is an error, or gives
    the first choice a reasoning, a refusal or tool calls (parts of their own)."""
    texts: list[str] = []
    model: str | None = None
    for data in events:
        if data == b"[DONE]":
            break
        try:
            chunk = orjson.loads(data)  # what it cannot read, the decoder reads, or refuses
        except ValueError:
            return None
        if not isinstance(chunk, dict) or chunk.get("error") is not None:
            return None
        if model is None:
            model = _model(chunk)
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            continue
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                continue
            for key, value in delta.items():
                if value and key in _NOT_TEXT:
                    return None
            content = delta.get("content")
            if isinstance(content, str):
                texts.append(content)
    return "".join(texts), model or ""


_NOT_TEXT = ("reasoning_content", "reasoning", "refusal", "tool_calls")
"""The delta fields a Chat decoder makes parts other than the text of (``_chat_text``)."""


def _messages_stream(raw: bytes) -> tuple[Usage | None, str]:
    """Anthropic's usage: the ``message_start``'s, with the counts of the last
    ``message_delta`` over it (as ``MessagesStreamDecoder`` merges them)."""
    events = _data_lines(raw)
    start = _object(events[0]).get("message") if events else None
    start = start if isinstance(start, dict) else {}
    counts: dict[str, Any] = dict(start.get("usage") or {})
    reported = "usage" in start
    for data in reversed(events[-8:]):
        found = _object(data)
        if found.get("type") == "message_delta" and isinstance(found.get("usage"), dict):
            counts.update(found["usage"])
            reported = True
            break
    return (_usage_of(Wire.MESSAGES, counts) if reported else None), _model(start)


def _usage_of(wire: Wire, raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    if wire is Wire.CHAT:
        from skillstate.protocols.openai_chat.usage import decode_usage as chat_usage

        return chat_usage(raw)
    if wire is Wire.RESPONSES:
        from skillstate.protocols.openai_responses.usage import decode_usage

        return decode_usage(raw)
    from skillstate.protocols.anthropic_messages.usage import read_counts, to_usage

    try:
        return to_usage(*read_counts(raw, "usage"))
    except ProtocolError:
        return None


def _data_lines(raw: bytes) -> list[bytes]:
    """The ``data:`` payloads of an SSE stream, in order (the rare multi-line payload is
    read by its lines, each then not an object: a usage is missed, never misread)."""
    out = []
    for line in raw.splitlines():
        if line.startswith(b"data:"):
            out.append(line[5:].strip())
    return out


def _object(data: bytes) -> dict[str, Any]:
    try:
        value = jsonio.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _model(body: Any) -> str:
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else ""
