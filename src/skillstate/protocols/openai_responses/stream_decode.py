"""A Responses SSE stream to canonical events.

Each output item is one canonical part (a message item: one part per content part), numbered
in the order they open. The parts carry the same hints as a decoded response body, with the
item's ``status`` taken as ``completed`` (what its ``output_item.done`` says on a finished
stream), so a stream re-encoded on this wire gives complete ``output_item.done`` items. A
reasoning item's ``encrypted_content`` only arrives in its ``output_item.done``: it becomes a
``Delta(signature=...)`` just before the ``PartEnd``. Summary parts after the first are
preceded by a blank-line delta, as in a decoded body. Where a server skipped the delta events,
the ``.done`` events fill in what is missing. Hosted-tool items (``web_search_call``...) are
``Opaque`` parts emitted whole at their ``output_item.done``.
"""

from __future__ import annotations

from collections.abc import Callable
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
    Reasoning,
    Start,
    Text,
    ToolCall,
    Wire,
)
from skillstate.protocols.openai_responses.content import decode_part
from skillstate.protocols.openai_responses.errors import STATUS, kind_of
from skillstate.protocols.openai_responses.turns import decode_item
from skillstate.protocols.openai_responses.usage import (
    CALL_TYPES,
    decode_usage,
    has_call,
    stop_reason,
)
from skillstate.protocols.sse import SSEEvent
from skillstate.support import jsonio

_RESPONSE_KEYS = frozenset(
    ("id", "model", "created_at", "output", "usage", "status", "incomplete_details", "error")
)
_TEXT_DELTAS = {"response.output_text.delta", "response.refusal.delta"}
_OUTPUT_TEXT: Json = {"type": "output_text", "annotations": [], "text": ""}
_REFUSAL: Json = {"type": "refusal", "refusal": ""}


@dataclass(slots=True)
class _Part:
    """One canonical part in flight: its index and how many characters it has delivered."""

    index: int
    sent: int = 0
    open: bool = True


@dataclass(slots=True)
class _Item:
    kind: str
    shell: Json
    part: _Part | None = None
    summaries: int = 0
    content: dict[int, _Part] = field(default_factory=dict)


class ResponsesStreamDecoder:
    __slots__ = ("_calls", "_finished", "_items", "_next", "_started")

    ended_short = False
    """This wire has no end marker apart from its finish events (``StreamDecoder``)."""

    def __init__(self) -> None:
        self._started = False
        self._next = 0
        self._items: dict[int, _Item] = {}
        self._calls = False
        self._finished = False

    def feed(self, event: SSEEvent) -> list[Event]:
        if not event.data or event.data.startswith("[DONE]"):
            return []
        try:
            data = jsonio.loads(event.data)
        except ValueError:
            return []  # not an event (a keep-alive, or junk): a stream cut by it fails at close
        if not isinstance(data, dict):
            return []
        name = data.get("type") or event.event or ""
        handler = _HANDLERS.get(name) if isinstance(name, str) else None
        return handler(self, data) if handler is not None else []

    def close(self) -> list[Event]:
        """A stream cut short (no ``response.completed``, ``failed`` or ``incomplete``): the
        parts still open end and the stream failed, so a cut answer never reads as whole."""
        if not self._started or self._finished:
            return []
        self._finished = True
        failure = Failure("the upstream stream ended early", ErrorKind.UPSTREAM, 502)
        return [*self._end_all(), failure]

    # -- lifecycle -----------------------------------------------------------------------

    def _start(self, response: object) -> list[Event]:
        if self._started:
            return []
        self._started = True
        body = response if isinstance(response, dict) else {}
        created = body.get("created_at")
        return [
            Start(
                id=str(body.get("id") or ""),
                model=str(body.get("model") or ""),
                source=Wire.RESPONSES,
                created=created if isinstance(created, int) else None,
                extra={k: v for k, v in body.items() if k not in _RESPONSE_KEYS},
            )
        ]

    def _on_created(self, data: Json) -> list[Event]:
        return self._start(data.get("response"))

    def _on_finished(self, data: Json) -> list[Event]:
        self._finished = True
        events = self._start(data.get("response"))
        events += self._end_all()
        body = data.get("response")
        body = body if isinstance(body, dict) else {}
        called = self._calls or has_call(body.get("output"))
        extra = {"error": body["error"]} if body.get("error") else {}
        reason = stop_reason(body.get("status"), body.get("incomplete_details"), called)
        usage = decode_usage(body["usage"]) if isinstance(body.get("usage"), dict) else None
        events.append(Finish(stop_reason=reason, usage=usage, extra=extra))
        return events

    def _on_error(self, data: Json) -> list[Event]:
        self._finished = True
        message = data.get("message")
        kind = kind_of(data.get("code"), data.get("type"), 500)
        text = message if isinstance(message, str) and message else "The upstream stream failed."
        return [Failure(message=text, kind=kind, status=STATUS.get(kind, 500))]

    # -- items ---------------------------------------------------------------------------

    def _open(self, part: Part) -> tuple[_Part, list[Event]]:
        state = _Part(self._next)
        self._next += 1
        return state, [PartStart(state.index, part)]

    def _on_item_added(self, data: Json) -> list[Event]:
        events = self._start(None)
        item = data.get("item")
        if not isinstance(item, dict):
            return events
        index = _index(data, len(self._items))
        state = _Item(str(item.get("type")), _finished(item))
        self._items[index] = state
        if state.kind == "message":
            state.shell = _finished(_without_content(item))
        elif state.kind in CALL_TYPES or state.kind == "reasoning":
            # An announced encrypted_content may be partial: the done item's is the one kept.
            opening = {k: v for k, v in _finished(item).items() if k != "encrypted_content"}
            part = decode_item(opening, index, f"output[{index}]")[0]
            state.part, opened = self._open(part)
            state.part.sent = len(_payload(part))
            events += opened
            self._calls = self._calls or state.kind in CALL_TYPES
        return events

    def _on_item_done(self, data: Json) -> list[Event]:
        item = data.get("item")
        if not isinstance(item, dict):
            return []
        index = _index(data, len(self._items))
        events: list[Event] = []
        if index not in self._items:
            events += self._on_item_added(data)
        state = self._items[index]
        if state.kind == "message":
            return events + self._message_done(state, item, index)
        if state.part is None:
            part = Opaque(Wire.RESPONSES, item, hints={"item": True})
            state.part, opened = self._open(part)
            return [*events, *opened, *self._end(state.part)]
        events += self._fill(state.part, _payload(decode_item(item, index, "")[0]))
        signature = item.get("encrypted_content")
        if state.kind == "reasoning" and isinstance(signature, str) and signature:
            events.append(Delta(state.part.index, signature=signature))
        return events + self._end(state.part)

    def _message_done(self, state: _Item, item: Json, index: int) -> list[Event]:
        events: list[Event] = []
        content = item.get("content")
        if not state.content and content == []:
            hints = {"seq": index, "item": state.shell, "empty": True}
            part, opened = self._open(Text("", hints=hints))
            return opened + self._end(part)
        for position, raw in enumerate(content if isinstance(content, list) else []):
            if position not in state.content:
                events += self._content_part(state, index, position, raw)
            events += self._fill(state.content[position], _text_of(raw))
            events += self._end(state.content[position])
        return events + [e for p in state.content.values() for e in self._end(p)]

    # -- content parts -------------------------------------------------------------------

    def _content_part(self, state: _Item, index: int, position: int, raw: object) -> list[Event]:
        part = decode_part(raw, f"output[{index}].content[{position}]")
        if isinstance(part, Text | Opaque):
            part.hints.update(seq=index, item=state.shell)
        state.content[position], events = self._open(part)
        state.content[position].sent = len(part.text) if isinstance(part, Text) else 0
        return events

    def _on_part_added(self, data: Json) -> list[Event]:
        state = self._items.get(_index(data, -1))
        part = data.get("part")
        position = data.get("content_index")
        if state is None or state.kind != "message" or not isinstance(position, int):
            return []
        if position in state.content or not isinstance(part, dict):
            return []
        if part.get("type") not in ("output_text", "refusal"):
            return []  # kept whole at content_part.done
        return self._content_part(state, _index(data, -1), position, part)

    def _on_part_done(self, data: Json) -> list[Event]:
        state = self._items.get(_index(data, -1))
        position = data.get("content_index")
        if state is None or state.kind != "message" or not isinstance(position, int):
            return []
        events: list[Event] = []
        part = data.get("part")
        if position not in state.content:
            if not isinstance(part, dict):
                return []
            events += self._content_part(state, _index(data, -1), position, part)
        events += self._fill(state.content[position], _text_of(part))
        return events + self._end(state.content[position])

    def _on_text_delta(self, data: Json) -> list[Event]:
        state = self._items.get(_index(data, -1))
        position = data.get("content_index")
        delta = data.get("delta")
        if state is None or not isinstance(position, int) or not isinstance(delta, str):
            return []
        events: list[Event] = []
        if position not in state.content:  # a server that sent no content_part.added
            refusal = data.get("type") == "response.refusal.delta"
            stub = _REFUSAL if refusal else _OUTPUT_TEXT
            events += self._content_part(state, _index(data, -1), position, stub)
        part = state.content[position]
        part.sent += len(delta)
        events.append(Delta(part.index, text=delta))
        return events

    def _on_text_done(self, data: Json) -> list[Event]:
        state = self._items.get(_index(data, -1))
        position = data.get("content_index")
        if state is None or not isinstance(position, int) or position not in state.content:
            return []
        text = data.get("text", data.get("refusal"))
        return self._fill(state.content[position], text if isinstance(text, str) else "")

    # -- calls and reasoning -------------------------------------------------------------

    def _on_item_delta(self, data: Json) -> list[Event]:
        state = self._items.get(_index(data, -1))
        delta = data.get("delta")
        if state is None or state.part is None or not isinstance(delta, str):
            return []
        state.part.sent += len(delta)
        return [Delta(state.part.index, text=delta)]

    def _on_item_delta_done(self, data: Json) -> list[Event]:
        state = self._items.get(_index(data, -1))
        full = data.get("arguments", data.get("input"))
        if state is None or state.part is None or not isinstance(full, str):
            return []
        return self._fill(state.part, full)

    def _on_summary_part(self, data: Json) -> list[Event]:
        state = self._items.get(_index(data, -1))
        if state is None or state.part is None:
            return []
        state.summaries += 1
        if state.summaries == 1:
            return []
        state.part.sent += 2
        return [Delta(state.part.index, text="\n\n")]

    # -- helpers -------------------------------------------------------------------------

    def _fill(self, part: _Part, full: str) -> list[Event]:
        """What a ``.done`` event holds beyond the deltas seen (servers that send no deltas)."""
        if not part.open or len(full) <= part.sent:
            return []
        rest = full[part.sent :]
        part.sent = len(full)
        return [Delta(part.index, text=rest)]

    def _end(self, part: _Part) -> list[Event]:
        if not part.open:
            return []
        part.open = False
        return [PartEnd(part.index)]

    def _end_all(self) -> list[Event]:
        events: list[Event] = []
        for state in self._items.values():
            for part in (state.part, *state.content.values()):
                if part is not None:
                    events += self._end(part)
        return events


def _index(data: Json, default: int) -> int:
    value = data.get("output_index")
    return value if isinstance(value, int) else default


def _finished(item: Json) -> Json:
    """The item as its ``output_item.done`` will show it on a finished stream."""
    if item.get("status") == "in_progress":
        return {**item, "status": "completed"}
    return item


def _without_content(item: Json) -> Json:
    return {k: v for k, v in item.items() if k != "content"}


def _payload(part: Part) -> str:
    """The text a part's deltas spell out (a call's arguments, a reasoning's text)."""
    if isinstance(part, Reasoning):
        return part.text
    return part.arguments if isinstance(part, ToolCall) else ""


def _text_of(part: object) -> str:
    if not isinstance(part, dict):
        return ""
    value = part.get("text", part.get("refusal"))
    return value if isinstance(value, str) else ""


_Handler = Callable[[ResponsesStreamDecoder, Json], list[Event]]
_HANDLERS: dict[str, _Handler] = {
    "response.created": ResponsesStreamDecoder._on_created,
    "response.in_progress": ResponsesStreamDecoder._on_created,
    "response.queued": ResponsesStreamDecoder._on_created,
    "response.completed": ResponsesStreamDecoder._on_finished,
    "response.incomplete": ResponsesStreamDecoder._on_finished,
    "response.failed": ResponsesStreamDecoder._on_finished,
    "error": ResponsesStreamDecoder._on_error,
    "response.output_item.added": ResponsesStreamDecoder._on_item_added,
    "response.output_item.done": ResponsesStreamDecoder._on_item_done,
    "response.content_part.added": ResponsesStreamDecoder._on_part_added,
    "response.content_part.done": ResponsesStreamDecoder._on_part_done,
    "response.output_text.done": ResponsesStreamDecoder._on_text_done,
    "response.refusal.done": ResponsesStreamDecoder._on_text_done,
    "response.function_call_arguments.delta": ResponsesStreamDecoder._on_item_delta,
    "response.function_call_arguments.done": ResponsesStreamDecoder._on_item_delta_done,
    "response.custom_tool_call_input.delta": ResponsesStreamDecoder._on_item_delta,
    "response.custom_tool_call_input.done": ResponsesStreamDecoder._on_item_delta_done,
    "response.reasoning_summary_part.added": ResponsesStreamDecoder._on_summary_part,
    "response.reasoning_summary_text.delta": ResponsesStreamDecoder._on_item_delta,
    "response.reasoning_text.delta": ResponsesStreamDecoder._on_item_delta,
    **{name: ResponsesStreamDecoder._on_text_delta for name in _TEXT_DELTAS},
}
