"""This wire's stream events to canonical events.

The stream (https://docs.anthropic.com/en/api/messages-streaming) is ``message_start``, then
per content block ``content_block_start``, ``content_block_delta``*, ``content_block_stop``,
then ``message_delta`` (stop reason, cumulative usage) and ``message_stop``; ``ping`` may come
anywhere and ``error`` ends it. The SSE ``event:`` line names the type (the data's ``type`` is
read where it is missing). A part's index is its block's index.

* Usage: ``message_start`` holds the prompt counts, ``message_delta`` the cumulative output
  (and sometimes prompt) counts; ``Finish`` carries both merged, later counts winning. A
  stream with no usage object anywhere (a server that sends none) has no usage: ``Start`` and
  ``Finish`` carry None, never zeros.
* A tool call opens with empty arguments and grows by ``input_json_delta``; a call whose
  deltas brought nothing is given ``{}`` before it ends, so its arguments are always JSON.
* A block the model has no part for (``server_tool_use``, ``web_search_tool_result`` ...) is
  collected (its input deltas included) and reported whole as an ``Opaque`` part when it
  stops. ``citations_delta`` is not carried into canonical events.

This runs on the hot path while the bytes are relayed: one JSON parse per event and no
copying of what has been seen.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import (
    Delta,
    ErrorKind,
    Event,
    Failure,
    Finish,
    Json,
    Opaque,
    PartEnd,
    PartStart,
    ProtocolError,
    Reasoning,
    Start,
    Text,
    ToolCall,
    Usage,
)
from skillstate.protocols.anthropic_messages.blocks import WIRE
from skillstate.protocols.anthropic_messages.errors import failure
from skillstate.protocols.anthropic_messages.usage import (
    decode_stop,
    read_counts,
    stop_kept,
    to_usage,
)
from skillstate.protocols.sse import SSEEvent
from skillstate.support.jsonio import dumps_str, loads

_START_KEYS = ("id", "model", "content", "usage", "stop_reason", "stop_sequence")
_TOOL_KEYS = ("type", "id", "name", "input")


class MessagesStreamDecoder:
    __slots__ = (
        "_counts",
        "_ended",
        "_opaque",
        "_reported",
        "_started",
        "_tools_waiting",
        "_usage_extra",
    )

    ended_short = False
    """This wire has no end marker apart from its finish events (``StreamDecoder``)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._usage_extra: Json = {}
        self._reported = False
        """Whether any event held a usage object (a stream with none has no usage, not 0)."""
        self._tools_waiting: set[int] = set()
        self._opaque: dict[int, tuple[Json, list[str]]] = {}
        self._started = False
        self._ended = False

    def feed(self, event: SSEEvent) -> list[Event]:
        if event.event == "ping" or not event.data or self._ended:
            return []
        try:
            data = loads(event.data)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            return [self._fail(failure(None))] if event.event == "error" else []
        name = event.event or data.get("type")
        handle = _HANDLERS.get(name) if isinstance(name, str) else None
        if handle is None:
            return []
        try:
            return handle(self, data)
        except ProtocolError:  # a malformed usage object: the relayed bytes are the client's
            return []

    def close(self) -> list[Event]:
        if self._started and not self._ended:
            return [self._fail(Failure("the upstream stream ended early", ErrorKind.UPSTREAM, 502))]
        return []

    def _fail(self, event: Failure) -> Failure:
        self._ended = True
        return event

    def _message_start(self, data: Json) -> list[Event]:
        message = data.get("message")
        if not isinstance(message, dict):
            return []
        self._started = True
        usage = message.get("usage")
        start_usage = None
        if isinstance(usage, dict):
            self._counts, self._usage_extra = read_counts(usage, "message.usage")
            self._reported = True
            start_usage = to_usage(self._counts, self._usage_extra)
        extra = {k: v for k, v in message.items() if k not in _START_KEYS}
        if self._usage_extra:
            extra["usage"] = self._usage_extra
        return [Start(_str(message, "id"), _str(message, "model"), WIRE, start_usage, extra=extra)]

    def _block_start(self, data: Json) -> list[Event]:
        index, block = data.get("index"), data.get("content_block")
        if not isinstance(index, int) or not isinstance(block, dict):
            return []
        kind = block.get("type")
        if kind == "text":
            return [PartStart(index, Text(_str(block, "text")))]
        if kind == "thinking":
            signature = _str(block, "signature") or None
            return [PartStart(index, Reasoning(_str(block, "thinking"), signature))]
        if kind == "redacted_thinking":
            return [PartStart(index, Reasoning(signature=_str(block, "data"), redacted=True))]
        if kind == "tool_use":
            extra = {k: v for k, v in block.items() if k not in _TOOL_KEYS}
            call = ToolCall(_str(block, "id"), _str(block, "name"), "", extra=extra)
            arguments = block.get("input")
            if isinstance(arguments, dict) and arguments:
                return [PartStart(index, call), Delta(index, dumps_str(arguments))]
            self._tools_waiting.add(index)
            return [PartStart(index, call)]
        self._opaque[index] = (dict(block), [])
        return []

    def _block_delta(self, data: Json) -> list[Event]:
        index, delta = data.get("index"), data.get("delta")
        if not isinstance(index, int) or not isinstance(delta, dict):
            return []
        kind = delta.get("type")
        if kind == "text_delta":
            return [Delta(index, _str(delta, "text"))]
        if kind == "thinking_delta":
            return [Delta(index, _str(delta, "thinking"))]
        if kind == "signature_delta":
            return [Delta(index, signature=_str(delta, "signature"))]
        if kind != "input_json_delta":
            return []
        fragment = _str(delta, "partial_json")
        opaque = self._opaque.get(index)
        if opaque is not None:
            opaque[1].append(fragment)
            return []
        if not fragment:
            return []
        self._tools_waiting.discard(index)
        return [Delta(index, fragment)]

    def _block_stop(self, data: Json) -> list[Event]:
        index = data.get("index")
        if not isinstance(index, int):
            return []
        opaque = self._opaque.pop(index, None)
        if opaque is not None:
            block, fragments = opaque
            if fragments:
                block["input"] = _json("".join(fragments))
            return [PartStart(index, Opaque(WIRE, block)), PartEnd(index)]
        if index in self._tools_waiting:
            self._tools_waiting.discard(index)
            return [Delta(index, "{}"), PartEnd(index)]
        return [PartEnd(index)]

    def _message_delta(self, data: Json) -> list[Event]:
        delta = data.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        usage = data.get("usage")
        if isinstance(usage, dict):
            counts, usage_extra = read_counts(usage, "usage")
            self._counts.update(counts)
            self._usage_extra = {**self._usage_extra, **usage_extra}  # Start's stays as it was
            self._reported = True
        raw = delta.get("stop_reason")
        stop = decode_stop(raw if isinstance(raw, str) else None)
        extra = {k: v for k, v in delta.items() if k != "stop_reason" or stop_kept(raw, stop)}
        if self._usage_extra:
            extra["usage"] = self._usage_extra
        self._ended = True
        return [Finish(stop, self._usage(), extra)]

    def _message_stop(self, data: Json) -> list[Event]:
        if self._ended:
            return []
        self._ended = True
        return [Finish(None, self._usage())]

    def _usage(self) -> Usage | None:
        """The stream's usage so far; None when no event held one."""
        return to_usage(self._counts, self._usage_extra) if self._reported else None

    def _error(self, data: Json) -> list[Event]:
        return [self._fail(failure(data))]


def _str(obj: Json, key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _json(text: str) -> Any:
    try:
        return loads(text)
    except ValueError:
        return text


_HANDLERS = {
    "message_start": MessagesStreamDecoder._message_start,
    "content_block_start": MessagesStreamDecoder._block_start,
    "content_block_delta": MessagesStreamDecoder._block_delta,
    "content_block_stop": MessagesStreamDecoder._block_stop,
    "message_delta": MessagesStreamDecoder._message_delta,
    "message_stop": MessagesStreamDecoder._message_stop,
    "error": MessagesStreamDecoder._error,
}
