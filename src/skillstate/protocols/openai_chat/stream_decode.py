"""Chat Completions SSE chunks to canonical stream events.

Each ``data:`` event is one ``chat.completion.chunk``; ``data: [DONE]`` ends the stream. Part
indexes are assigned here, in opening order: the text opens at the first non-empty
``content``, a ``reasoning_content`` (or ``reasoning``) delta opens a ``Reasoning`` part, a
``refusal`` delta a ``Text`` hinted ``{"refusal": True}``, and each ``tool_calls[].index`` its
own ``ToolCall``. A text or reasoning part ends when another kind of part begins; tool calls
stay open (parallel calls may interleave) until ``finish_reason``, which ends every open part.
``Finish`` waits for ``[DONE]`` (or ``close()``) because the usage chunk that
``stream_options.include_usage`` asks for comes after the finish reason, with ``choices: []``.

Only the first choice is decoded: with ``n`` > 1 the other choices are not part of the
canonical response (the same wire relays the bytes themselves). An ``{"error": {...}}`` event
is a ``Failure`` and ends the stream.
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
    Part,
    PartEnd,
    PartStart,
    Reasoning,
    Start,
    StopReason,
    Text,
    ToolCall,
    Usage,
    Wire,
)
from skillstate.protocols.openai_chat.errors import stream_error
from skillstate.protocols.openai_chat.messages import REASONING_KEYS
from skillstate.protocols.openai_chat.usage import decode_usage, stop_reason
from skillstate.protocols.sse import SSEEvent
from skillstate.support.jsonio import loads

_CHUNK_KEYS = ("id", "object", "created", "model", "choices", "usage", "obfuscation")
_SOLO = ("reasoning", "text", "refusal")


class ChatStreamDecoder:
    __slots__ = (
        "_done",
        "_finish_reason",
        "_next",
        "_open",
        "_started",
        "_stop",
        "_usage",
        "ended_short",
    )

    def __init__(self) -> None:
        self._started = False
        self._done = False
        self._next = 0
        self._open: dict[str | int, int] = {}
        self._stop: StopReason | None = None
        self._finish_reason: Any = None
        self._usage: Usage | None = None
        self.ended_short = False
        """``[DONE]`` came with no ``finish_reason`` before it: the answer is not whole (a
        server that ends a stream it dropped this way, as llama.cpp's does when another
        request takes its slot); no ``Finish`` is made up for it."""

    def feed(self, event: SSEEvent) -> list[Event]:
        if self._done:
            return []
        if event.data.strip() == "[DONE]":
            if self._finish_reason is None:
                self._done = self.ended_short = True
                return []
            return self._finish()
        try:
            chunk = loads(event.data)
        except ValueError:
            return []  # not a chunk (a keep-alive some servers send as data)
        if not isinstance(chunk, dict):
            return []
        if chunk.get("error") is not None:
            self._done = True
            kind, message, status = stream_error(chunk["error"])
            return [Failure(message, kind, status)]
        out: list[Event] = []
        if not self._started:
            self._started = True
            out.append(_start(chunk))
        choices = chunk.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict) and choice.get("index", 0) == 0:
                    self._choice(choice, out)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = decode_usage(usage)
        return out

    def close(self) -> list[Event]:
        """End of the byte stream. One that gave its finish reason but no ``[DONE]`` is
        finished (some servers leave it out); one cut before either failed, and says so: a
        cut stream is never passed on as a complete answer."""
        if self._done or not self._started:
            self._done = True
            return []
        if self._finish_reason is None:
            self._done = True
            return [Failure("the upstream stream ended early", ErrorKind.UPSTREAM, 502)]
        return self._finish()

    def _finish(self) -> list[Event]:
        out: list[Event] = []
        self._end_all(out)
        self._done = True
        extra: Json = {}
        if self._finish_reason is not None:
            extra["finish_reason"] = self._finish_reason
        out.append(Finish(self._stop, self._usage, extra))
        return out

    def _choice(self, choice: Json, out: list[Event]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            for key in REASONING_KEYS:
                value = delta.get(key)
                if isinstance(value, str) and value:
                    self._solo("reasoning", Reasoning(hints={"key": key}), value, out)
                    break
            content = delta.get("content")
            if isinstance(content, str) and content:
                self._solo("text", Text(""), content, out)
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:
                self._solo("refusal", Text("", hints={"refusal": True}), refusal, out)
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                for call in calls:
                    if isinstance(call, dict):
                        self._call(call, out)
        reason = choice.get("finish_reason")
        if reason is not None:
            self._end_all(out)
            self._finish_reason = reason
            self._stop = stop_reason(reason)

    def _solo(self, key: str, part: Part, text: str, out: list[Event]) -> None:
        """More of the single open text, refusal or reasoning part; opening it ends the
        others of those three."""
        index = self._open.get(key)
        if index is None:
            for other in _SOLO:
                if other in self._open:
                    out.append(PartEnd(self._open.pop(other)))
            index = self._begin(key, part, out)
        out.append(Delta(index, text))

    def _call(self, call: Json, out: list[Event]) -> None:
        position = call.get("index", 0)
        key = position if isinstance(position, int) else 0
        kind = "custom" if call.get("type") == "custom" or "custom" in call else "function"
        inner = call.get(kind)
        inner = inner if isinstance(inner, dict) else {}
        index = self._open.get(key)
        if index is None:
            for other in _SOLO:
                if other in self._open:
                    out.append(PartEnd(self._open.pop(other)))
            call_id, name = call.get("id"), inner.get("name")
            part = ToolCall(
                call_id if isinstance(call_id, str) else "",
                name if isinstance(name, str) else "",
                "",
                kind=kind,
            )
            index = self._begin(key, part, out)
        text = inner.get("arguments" if kind == "function" else "input")
        if isinstance(text, str) and text:
            out.append(Delta(index, text))

    def _begin(self, key: str | int, part: Part, out: list[Event]) -> int:
        index = self._next
        self._next += 1
        self._open[key] = index
        out.append(PartStart(index, part))
        return index

    def _end_all(self, out: list[Event]) -> None:
        out.extend(PartEnd(index) for index in self._open.values())
        self._open.clear()


def _start(chunk: Json) -> Start:
    response_id, model, created = chunk.get("id"), chunk.get("model"), chunk.get("created")
    return Start(
        id=response_id if isinstance(response_id, str) else "",
        model=model if isinstance(model, str) else "",
        source=Wire.CHAT,
        created=created if isinstance(created, int) and not isinstance(created, bool) else None,
        extra={k: v for k, v in chunk.items() if k not in _CHUNK_KEYS},
    )
