"""Canonical events to this wire's stream, the exact sequence the SDK and Claude Code read::

    message_start, (content_block_start, content_block_delta*, content_block_stop)*,
    message_delta, message_stop            (or an ``error`` event, which ends the stream)

* Blocks are numbered 0, 1, 2 ... in the order parts open, and run one at a time as this wire's
  do: a part opening closes the block still open. (A delta that arrives for a part already
  closed this way is still sent with that block's index; the SDK accumulates by index.)
* A text block opens empty and grows by ``text_delta``; a tool call opens with ``input: {}``
  and grows by ``input_json_delta`` (a ``custom`` call's raw input is wrapped as the JSON
  string of ``{"input": ...}``, piece by piece); a thinking block opens empty, grows by
  ``thinking_delta`` and gets its signature as one ``signature_delta`` before it stops (the
  SDK replaces the signature on each one, canonical deltas append to it).
* ``Finish`` without usage (some wires send usage in a later event) waits for the next
  ``Finish`` or for ``close``; nothing else is held back.
* This wire requires a usage object in ``message_start``, before any count may be known:
  there it is what the stream's ``Start`` said (the round loop puts its own count of the
  prompt in a ``Start`` that said nothing; zeros only where no one counted), provisional as
  the API's own start is (it counts one output token). The counts that stand are
  ``message_delta``'s, which the SDK's accumulated message takes over: every count the
  ``Finish`` holds that is not zero (a stream from another wire reports its prompt counts at
  its end), or, where the upstream reported none, the gateway's own count, which the round
  loop puts in (``Adapter.usage_required``). ``close`` on a stream that never
  finished sends an ``error`` event, so the client does not take it for a whole answer.
* A part this wire cannot stream (an image, another wire's opaque item) raises
  ``ProtocolError``; the caller reports it, typically by encoding a ``Failure``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from skillstate.conversation import (
    Delta,
    ErrorKind,
    Event,
    Failure,
    Finish,
    Json,
    Opaque,
    Part,
    PartEnd,
    PartStart,
    ProtocolError,
    Reasoning,
    Request,
    Start,
    StopReason,
    Text,
    ToolCall,
    Usage,
)
from skillstate.protocols.anthropic_messages.blocks import WIRE, encode_opaque
from skillstate.protocols.anthropic_messages.errors import error_body
from skillstate.protocols.anthropic_messages.usage import (
    COUNTS,
    MESSAGE_KEYS,
    OUTPUT,
    encode_stop,
    encode_usage,
)
from skillstate.protocols.fields import merged
from skillstate.protocols.sse import encode_event
from skillstate.support.jsonio import dumps_str

#: The message id sent when the stream gives none.
FALLBACK_ID = "msg_skillstate"


@dataclass(slots=True)
class _Block:
    index: int
    kind: str  # text | tool | custom | thinking | fixed
    signature: list[str] = field(default_factory=list)
    open: bool = True


class MessagesStreamEncoder:
    __slots__ = (
        "_blocks",
        "_done",
        "_extra",
        "_finishing",
        "_model",
        "_native",
        "_open",
        "_start_usage",
        "_started",
        "_stop",
        "_usage",
    )

    def __init__(self, request: Request | None = None) -> None:
        self._model = request.model if request is not None else ""
        self._blocks: dict[int, _Block] = {}
        self._open: _Block | None = None
        self._started = self._native = self._finishing = self._done = False
        self._start_usage = Usage()
        self._stop: StopReason | None = None
        self._usage: Usage | None = None
        self._extra: Json = {}

    def encode(self, event: Event) -> bytes:
        if self._done:
            return b""
        if isinstance(event, Start):
            return self._start(event)
        if isinstance(event, Failure):
            self._done = True
            return _sse("error", error_body(event.status, event.kind, event.message))
        head = b"" if self._started else self._start(Start(FALLBACK_ID, self._model))
        if isinstance(event, Delta):
            return head + self._delta(event)
        if isinstance(event, PartStart):
            return head + self._part_start(event)
        if isinstance(event, PartEnd):
            block = self._blocks.get(event.index)
            return head + (self._stop_block(block) if block is not None else b"")
        return head + self._finish(event)

    def close(self) -> bytes:
        if self._done:
            return b""
        if self._finishing:
            return self._end()
        if self._started:
            return self.encode(Failure("the upstream stream ended early", ErrorKind.UPSTREAM, 502))
        return b""

    def _start(self, event: Start) -> bytes:
        if self._started:
            return b""
        self._started = True
        self._native = event.source is WIRE
        self._start_usage = event.usage or Usage()
        extra = event.extra if self._native else {}
        usage_extra = extra.get("usage")
        message: Json = {
            "id": event.id or FALLBACK_ID,
            "type": "message",
            "role": "assistant",
            "model": event.model or self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": encode_usage(
                self._start_usage,
                COUNTS if self._native else MESSAGE_KEYS,
                usage_extra if isinstance(usage_extra, dict) else None,
            ),
        }
        merged(message, {k: v for k, v in extra.items() if k != "usage"})
        return _sse("message_start", {"type": "message_start", "message": message})

    def _part_start(self, event: PartStart) -> bytes:
        head = self._stop_block(self._open) if self._open is not None else b""
        if event.index in self._blocks:
            return head
        block, opening, first = _opening(event.part, len(self._blocks), self._native)
        self._blocks[event.index] = self._open = block
        start = {"type": "content_block_start", "index": block.index, "content_block": opening}
        out = head + _sse("content_block_start", start)
        return out + _block_delta(block, first) if first is not None else out

    def _delta(self, event: Delta) -> bytes:
        block = self._blocks.get(event.index)
        if block is None:
            return b""
        if event.signature and block.kind == "thinking":
            block.signature.append(event.signature)
        if block.kind == "text":
            delta = _text_delta(event.text)
        elif block.kind == "tool":
            delta = _json_delta(event.text)
        elif block.kind == "custom":
            delta = _json_delta(_escaped(event.text))
        elif block.kind == "thinking":
            delta = _thinking_delta(event.text)
        else:
            delta = None
        return b"" if delta is None else _block_delta(block, delta)

    def _stop_block(self, block: _Block) -> bytes:
        if not block.open:
            return b""
        block.open = False
        if self._open is block:
            self._open = None
        out = b""
        if block.signature:
            signature = "".join(block.signature)
            out = _block_delta(block, {"type": "signature_delta", "signature": signature})
        elif block.kind == "custom":
            out = _block_delta(block, {"type": "input_json_delta", "partial_json": '"}'})
        stop = {"type": "content_block_stop", "index": block.index}
        return out + _sse("content_block_stop", stop)

    def _finish(self, event: Finish) -> bytes:
        out = self._stop_block(self._open) if self._open is not None else b""
        self._finishing = True
        if event.stop_reason is not None:
            self._stop = event.stop_reason
        if self._native and event.extra:
            self._extra = event.extra
        if event.usage is None:
            return out
        self._usage = event.usage
        return out + self._end()

    def _end(self) -> bytes:
        self._done = True
        extra = self._extra
        stop_reason: str | None = encode_stop(self._stop, extra.get("stop_reason"))
        if self._stop is None and self._native:
            stop_reason = None  # as this wire sent it
        delta: Json = {"stop_reason": stop_reason, "stop_sequence": extra.get("stop_sequence")}
        merged(delta, {k: v for k, v in extra.items() if k != "usage"})
        usage_extra = extra.get("usage")
        usage = encode_usage(
            self._usage or Usage(output=self._start_usage.output),
            (OUTPUT,),
            usage_extra if isinstance(usage_extra, dict) else None,
        )
        body = {"type": "message_delta", "delta": delta, "usage": usage}
        return _sse("message_delta", body) + _sse("message_stop", {"type": "message_stop"})


def _opening(part: Part, index: int, native: bool) -> tuple[_Block, Json, Json | None]:
    """The block a part opens, its ``content_block`` (with this wire's own extra fields, such
    as a tool call's ``caller``), and its first delta if it has one."""
    if isinstance(part, Text):
        return _Block(index, "text"), {"type": "text", "text": ""}, _text_delta(part.text)
    if isinstance(part, ToolCall):
        call_id = part.id or f"toolu_{index}"
        opening: Json = {"type": "tool_use", "id": call_id, "name": part.name, "input": {}}
        if native:
            merged(opening, part.extra)
        if part.kind == "custom":
            first = _json_delta('{"input":"' + _escaped(part.arguments))
            return _Block(index, "custom"), opening, first
        return _Block(index, "tool"), opening, _json_delta(part.arguments)
    if isinstance(part, Reasoning):
        if part.redacted:
            return _Block(index, "fixed"), _redacted(part), None
        block = _Block(index, "thinking", [part.signature] if part.signature else [])
        opening = {"type": "thinking", "thinking": "", "signature": ""}
        return block, opening, _thinking_delta(part.text)
    if isinstance(part, Opaque):
        return _Block(index, "fixed"), encode_opaque(part), None
    raise ProtocolError(f"a {type(part).__name__} part cannot be streamed on {WIRE.value}")


def _text_delta(text: str) -> Json | None:
    return {"type": "text_delta", "text": text} if text else None


def _json_delta(text: str) -> Json | None:
    return {"type": "input_json_delta", "partial_json": text} if text else None


def _thinking_delta(text: str) -> Json | None:
    return {"type": "thinking_delta", "thinking": text} if text else None


def _redacted(part: Reasoning) -> Json:
    return {"type": "redacted_thinking", "data": part.signature or ""}


def _escaped(text: str) -> str:
    """``text`` as the inside of a JSON string (escaping is per character, so pieces of a
    string escape to pieces of its escaped form)."""
    return dumps_str(text)[1:-1]


def _block_delta(block: _Block, delta: Json) -> bytes:
    body = {"type": "content_block_delta", "index": block.index, "delta": delta}
    return _sse("content_block_delta", body)


def _sse(name: str, data: Json) -> bytes:
    return encode_event(dumps_str(data), name)
