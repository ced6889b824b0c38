"""Canonical stream events to Chat Completions SSE bytes, as OpenAI sends them.

The first chunk carries ``delta: {role: "assistant", content: ""}``; text and refusal come as
``content`` / ``refusal`` fragments; each tool call opens with one chunk holding its
``index``, ``id``, ``type`` and name, then argument fragments under the same ``index``. The
finish chunk has an empty delta and the ``finish_reason``; the usage chunk (``choices: []``)
follows only when the client asked ``stream_options.include_usage`` (always when the request
is unknown) and the stream has a usage (a stream whose upstream reported none gets no usage
chunk, never one of zeros: the SDKs then leave ``usage`` None, as the upstream did), and then
every chunk before it carries ``"usage": null``; ``data: [DONE]`` ends the stream. A
``Failure`` is sent as ``{"error": {...}}``, which the OpenAI SDKs raise as an ``APIError``,
followed by ``[DONE]``.

A stream from a wire with no creation time is dated with the time the client's request was
received (``Request.received``). Reasoning is sent only on a stream from this wire, under the
key it came with (``reasoning_content``...). A call to a tool the client declared as custom
that another wire carried as a function call (arguments ``{"input": "..."}``) is held until its
part ends and sent whole in the custom shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from skillstate.conversation import (
    Delta,
    Event,
    Failure,
    Finish,
    Json,
    PartEnd,
    PartStart,
    Reasoning,
    Request,
    Start,
    Text,
    ToolCall,
    Usage,
    Wire,
)
from skillstate.protocols.openai_chat.errors import error_body
from skillstate.protocols.openai_chat.params import asks_usage
from skillstate.protocols.openai_chat.tool_calls import custom_input, custom_tool_names
from skillstate.protocols.openai_chat.usage import encode_usage, finish_reason
from skillstate.support.jsonio import dumps

_DONE = b"data: [DONE]\n\n"


@dataclass(slots=True)
class _Part:
    """How one open part is written: under ``key`` of the delta, or as tool call ``call``."""

    key: str | None = None
    call: int | None = None
    kind: str = "function"
    held: ToolCall | None = None


class ChatStreamEncoder:
    __slots__ = (
        "_custom",
        "_done",
        "_head",
        "_native",
        "_next_call",
        "_parts",
        "_received",
        "_start_usage",
        "_with_usage",
    )

    def __init__(self, request: Request | None) -> None:
        self._with_usage = _wants_usage(request)
        self._custom = custom_tool_names(request)
        self._received = request.received if request is not None else None
        self._head = b""
        self._native = False
        self._parts: dict[int, _Part] = {}
        self._next_call = 0
        self._start_usage: Usage | None = None
        self._done = False

    def encode(self, event: Event) -> bytes:
        if self._done:
            return b""
        if isinstance(event, Delta):
            return self._delta(event)
        if isinstance(event, Start):
            return self._start(event)
        if isinstance(event, Failure):
            self._done = True
            error = error_body(event.status, event.kind, event.message)
            return b"data: " + dumps(error) + b"\n\n" + _DONE
        head = b"" if self._head else self._start(Start(id="", model=""))
        if isinstance(event, PartStart):
            return head + self._part_start(event)
        if isinstance(event, PartEnd):
            return head + self._part_end(event.index)
        if isinstance(event, Finish):
            return head + self._finish(event)
        return head

    def close(self) -> bytes:
        return b""

    def _start(self, event: Start) -> bytes:
        self._native = event.source in (None, Wire.CHAT)
        self._start_usage = event.usage
        base: Json = {
            "id": event.id,
            "object": "chat.completion.chunk",
            "created": event.created or self._received or 0,
            "model": event.model,
        }
        if self._native:
            base.update({k: v for k, v in event.extra.items() if k not in base})
        self._head = b"data: " + dumps(base)[:-1] + b',"choices":'
        return self._chunk({"role": "assistant", "content": ""})

    def _chunk(self, delta: Json, finish: Any = None) -> bytes:
        """One chunk of choice 0; with ``include_usage`` it says ``"usage": null``, as every
        chunk but the usage chunk does on the OpenAI API."""
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        tail = b',"usage":null}\n\n' if self._with_usage else b"}\n\n"
        return self._head + dumps([choice]) + tail

    def _part_start(self, event: PartStart) -> bytes:
        part = event.part
        if isinstance(part, ToolCall):
            return self._call_start(event.index, part)
        state = _Part()
        if isinstance(part, Text):
            state.key = "refusal" if self._native and part.hints.get("refusal") else "content"
        elif isinstance(part, Reasoning) and self._native:
            state.key = part.hints.get("key")
        self._parts[event.index] = state
        text = part.text if isinstance(part, Text | Reasoning) else ""
        return self._delta(Delta(event.index, text)) if text else b""

    def _call_start(self, index: int, call: ToolCall) -> bytes:
        state = _Part(call=self._next_call, kind=call.kind)
        self._next_call += 1
        self._parts[index] = state
        if call.kind != "custom" and call.name in self._custom and not self._native:
            state.held = ToolCall(call.id, call.name, call.arguments)
            return b""
        kind = "custom" if call.kind == "custom" else "function"
        state.kind = kind
        inner = {"name": call.name, "arguments" if kind == "function" else "input": call.arguments}
        entry = {"index": state.call, "id": call.id, "type": kind, kind: inner}
        return self._chunk({"tool_calls": [entry]})

    def _delta(self, event: Delta) -> bytes:
        state = self._parts.get(event.index)
        if state is None or not event.text:
            return b""
        if state.held is not None:
            state.held.arguments += event.text
            return b""
        if state.call is None:
            return self._chunk({state.key: event.text}) if state.key else b""
        field = "arguments" if state.kind == "function" else "input"
        entry = {"index": state.call, state.kind: {field: event.text}}
        return self._chunk({"tool_calls": [entry]})

    def _part_end(self, index: int) -> bytes:
        state = self._parts.pop(index, None)
        if state is None or state.held is None:
            return b""
        held = state.held
        inner = {"name": held.name, "input": custom_input(held.arguments)}
        entry = {"index": state.call, "id": held.id, "type": "custom", "custom": inner}
        return self._chunk({"tool_calls": [entry]})

    def _finish(self, event: Finish) -> bytes:
        out = b"".join(self._part_end(index) for index in list(self._parts))
        original = event.extra.get("finish_reason") if self._native else None
        out += self._chunk({}, finish_reason(event.stop_reason, original) or "stop")
        usage = self._start_usage
        if event.usage is not None:
            usage = (usage or Usage()).updated(event.usage)
        if self._with_usage and usage is not None:
            out += self._head + b"[]," + b'"usage":' + dumps(encode_usage(usage)) + b"}\n\n"
        self._done = True
        return out + _DONE


def _wants_usage(request: Request | None) -> bool:
    if request is None or request.source is not Wire.CHAT:
        return True
    return asks_usage(request.extra)
