"""The output items of a Responses stream being written: each knows its ``output_index`` and
``item_id``, the events its content produces, and the complete item its
``response.output_item.done`` carries (Codex builds its history from those, so they hold
everything: ``call_id``, ``encrypted_content``, the full text).

Each method returns ``(event type, fields)`` pairs; the encoder numbers and frames them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from skillstate.conversation import Json, Opaque, Reasoning, Text, ToolCall
from skillstate.protocols.openai_responses.content import encode_text, opaque_data
from skillstate.protocols.openai_responses.turns import (
    IdMaker,
    custom_input,
    encode_call,
    encode_reasoning,
)

Out = list[tuple[str, Json]]


def _opening(item: Json) -> Json:
    return {**item, "status": "in_progress"} if "status" in item else item


@dataclass(slots=True)
class MessageItem:
    """An assistant message item; its content parts are canonical Text parts."""

    output_index: int
    key: object
    shell: Json
    parts: list[Json] = field(default_factory=list)
    open_parts: int = 0
    closed: bool = False

    @classmethod
    def open(cls, output_index: int, part: Text | Opaque, own: bool, ids: IdMaker) -> MessageItem:
        shell = part.hints.get("item") if own else None
        if shell is None or "id" not in shell:
            shell = {
                "id": ids("msg", ""),
                "type": "message",
                "status": "completed",
                "role": "assistant",
            }
        key = part.hints.get("seq") if own and "seq" in part.hints else "new"
        return cls(output_index, key, shell)

    @property
    def item_id(self) -> str:
        return str(self.shell["id"])

    def added(self) -> Out:
        item = {**_opening(self.shell), "content": []}
        return [("response.output_item.added", {"output_index": self.output_index, "item": item})]

    def done(self) -> tuple[Json, Out]:
        self.closed = True
        item = {**self.shell, "content": self.parts}
        return item, [
            ("response.output_item.done", {"output_index": self.output_index, "item": item})
        ]

    def where(self, content_index: int) -> Json:
        return {
            "item_id": self.item_id,
            "output_index": self.output_index,
            "content_index": content_index,
        }


@dataclass(slots=True)
class TextPart:
    """One content part of a message item being streamed."""

    message: MessageItem
    content_index: int
    final: Json
    chunks: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, message: MessageItem, part: Text | Opaque, own: bool) -> tuple[TextPart, Out]:
        if isinstance(part, Opaque):
            final = opaque_data(part)
        elif own:
            final = encode_text(part, own=True, default="output_text")
        else:
            final = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        state = cls(message, len(message.parts), final)
        message.parts.append(final)
        message.open_parts += 1
        start = {**final, state.key: ""} if state.key else final
        out: Out = [
            ("response.content_part.added", {**message.where(state.content_index), "part": start})
        ]
        if isinstance(part, Text) and part.text:
            out += state.delta(part.text)
        return state, out

    @property
    def key(self) -> str | None:
        """The field holding this part's text (None for a part kept whole)."""
        kind = self.final.get("type")
        if kind == "refusal":
            return "refusal"
        return "text" if kind in ("output_text", "input_text") else None

    def delta(self, text: str) -> Out:
        if self.key is None or not text:
            return []
        self.chunks.append(text)
        name = "response.refusal.delta" if self.key == "refusal" else "response.output_text.delta"
        fields: Json = {**self.message.where(self.content_index), "delta": text}
        if self.key == "text":
            fields["logprobs"] = []
        return [(name, fields)]

    def end(self) -> Out:
        self.message.open_parts -= 1
        where = self.message.where(self.content_index)
        if self.key is None:
            return [("response.content_part.done", {**where, "part": self.final})]
        text = "".join(self.chunks)
        self.final[self.key] = text
        if self.key == "refusal":
            out: Out = [("response.refusal.done", {**where, "refusal": text})]
        else:
            out = [("response.output_text.done", {**where, "text": text, "logprobs": []})]
        return [*out, ("response.content_part.done", {**where, "part": dict(self.final)})]


@dataclass(slots=True)
class CallItem:
    """A function or custom tool call. A call of another wire to a tool that is freeform on
    the client's side carries ``{"input": ...}`` JSON: it is buffered and sent as raw input."""

    output_index: int
    item: Json
    custom: bool
    buffered: bool
    chunks: list[str] = field(default_factory=list)

    @classmethod
    def open(
        cls, index: int, call: ToolCall, own: bool, custom: frozenset[str], ids: IdMaker
    ) -> tuple[CallItem, Out]:
        item = encode_call(call, own=own, custom=custom, ids=ids)
        freeform = item["type"] == "custom_tool_call"
        item.setdefault("id", ids("ctc" if freeform else "fc", call.id))
        state = cls(index, item, freeform, buffered=freeform and not own)
        item[state.field] = ""
        out: Out = [("response.output_item.added", {"output_index": index, "item": _opening(item)})]
        if call.arguments:
            out += state.delta(call.arguments)
        return state, out

    @property
    def field(self) -> str:
        return "input" if self.custom else "arguments"

    def where(self) -> Json:
        return {"item_id": self.item["id"], "output_index": self.output_index}

    def delta(self, text: str) -> Out:
        if not text:
            return []
        self.chunks.append(text)
        if self.buffered:
            return []
        name = "custom_tool_call_input" if self.custom else "function_call_arguments"
        return [(f"response.{name}.delta", {**self.where(), "delta": text})]

    def end(self) -> tuple[Json, Out]:
        text = "".join(self.chunks)
        out: Out = []
        if self.buffered:
            text = custom_input(text)
            self.buffered = False
            out += self.delta(text)
        self.item[self.field] = text
        name = "custom_tool_call_input" if self.custom else "function_call_arguments"
        out.append((f"response.{name}.done", {**self.where(), self.field: text}))
        out.append(
            ("response.output_item.done", {"output_index": self.output_index, "item": self.item})
        )
        return self.item, out


@dataclass(slots=True)
class ReasoningItem:
    """A reasoning item: its text streams as one summary part; the signature (OpenAI's
    ``encrypted_content``) is only in the done item."""

    output_index: int
    part: Reasoning
    own: bool
    item_id: str
    chunks: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)

    @classmethod
    def open(
        cls, index: int, part: Reasoning, own: bool, ids: IdMaker
    ) -> tuple[ReasoningItem, Out]:
        item_id = part.extra.get("id") if own else None
        state = cls(index, part, own, str(item_id or ids("rs", "")))
        opening = {
            "id": state.item_id,
            **(part.extra if own else {}),
            "type": "reasoning",
            "summary": [],
        }
        out: Out = [
            ("response.output_item.added", {"output_index": index, "item": _opening(opening)})
        ]
        out += state.delta(part.text, part.signature or "")
        return state, out

    def where(self) -> Json:
        return {"item_id": self.item_id, "output_index": self.output_index, "summary_index": 0}

    def delta(self, text: str, signature: str) -> Out:
        if signature:
            self.signature.append(signature)
        if not text:
            return []
        out: Out = []
        if not self.chunks:
            part = {"type": "summary_text", "text": ""}
            out.append(("response.reasoning_summary_part.added", {**self.where(), "part": part}))
        self.chunks.append(text)
        return [*out, ("response.reasoning_summary_text.delta", {**self.where(), "delta": text})]

    def end(self) -> tuple[Json, Out]:
        text = "".join(self.chunks)
        out: Out = []
        if text:
            part = {"type": "summary_text", "text": text}
            out.append(("response.reasoning_summary_text.done", {**self.where(), "text": text}))
            out.append(("response.reasoning_summary_part.done", {**self.where(), "part": part}))
        final = Reasoning(
            text, "".join(self.signature) or None, extra=self.part.extra, hints=self.part.hints
        )
        if self.own:
            item = encode_reasoning(final, own=True, ids=None) or {}
        else:
            item = {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": text}] if text else [],
            }
            if final.signature is not None:
                item["encrypted_content"] = final.signature
        item = {"id": self.item_id, **item}
        out.append(("response.output_item.done", {"output_index": self.output_index, "item": item}))
        return item, out
