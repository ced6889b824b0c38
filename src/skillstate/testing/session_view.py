"""A request as the scripted model reads it, on any wire: messages of text, calls and results.

The scripted model must answer from what it was actually sent, as a real model does; this is
its reading of a ``RecordedRequest``: the system texts and every message in order, each as
its role, its texts, the calls it makes and the results it carries. Wire details (ids of
items, cache markers, signatures) are left out; reasoning is read as text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from skillstate.conversation import Wire
from skillstate.support import jsonio
from skillstate.testing.recording import RecordedRequest

NOTE_PREFIX = "[skillstate]"
"""How the gateway's own messages (the Σ message, the tail note) begin."""


@dataclass(frozen=True, slots=True)
class Call:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Seen:
    """One message: ``results`` are (call id, output text) pairs."""

    role: str
    texts: tuple[str, ...] = ()
    calls: tuple[Call, ...] = ()
    results: tuple[tuple[str, str], ...] = ()

    @property
    def from_gateway(self) -> bool:
        return bool(self.texts) and all(t.startswith(NOTE_PREFIX) for t in self.texts)

    @property
    def is_instruction(self) -> bool:
        """A user message with words of its own (not only results, not the gateway's)."""
        return self.role == "user" and bool(self.own_texts)

    @property
    def own_texts(self) -> tuple[str, ...]:
        return tuple(t for t in self.texts if t.strip() and not t.startswith(NOTE_PREFIX))


def read_request(recorded: RecordedRequest) -> list[Seen]:
    """``recorded``'s system texts (as one ``system`` message, when there are any) and its
    messages, in order."""
    body = recorded.json
    if not isinstance(body, dict) or recorded.wire is None:
        raise ValueError(f"request #{recorded.index} is not a model request")
    if recorded.wire is Wire.RESPONSES:
        return list(_responses(body))
    if recorded.wire is Wire.MESSAGES:
        return list(_messages(body))
    return list(_chat(body))


HANDOVER_HEADING = NOTE_PREFIX + " The conversation above is about to be condensed."
"""How the gateway's handover instruction starts (``state.handover``), spelled here so that
the scripted models read requests as a model would, without the gateway's code."""


PAPER_STATE = re.compile(r"State Σ:\n```json\n(.*?)\n```", re.S)
"""Σ as paper mode shows it, in a user message of the request."""


def paper_state(seen: Sequence[Seen]) -> dict[str, Any] | None:
    """Σ as paper mode shows it (its ``State Σ:`` block), or None outside paper mode."""
    for message in seen:
        for text in message.texts if message.role == "user" else ():
            if match := PAPER_STATE.search(text):
                try:
                    value = jsonio.loads(match.group(1))
                except ValueError:
                    return {}
                return value if isinstance(value, dict) else {}
    return None


def handing_over(seen: Sequence[Seen]) -> bool:
    """Whether the request ends in the gateway's handover instruction: the model is asked to
    reply with a patch of Σ before the history is collapsed."""
    return (
        bool(seen)
        and seen[-1].role == "user"
        and any(t.startswith(HANDOVER_HEADING) for t in seen[-1].texts)
    )


def tool_names(recorded: RecordedRequest) -> frozenset[str]:
    """The names of the function tools the request offers, on any wire."""
    body = recorded.json if isinstance(recorded.json, dict) else {}
    names = set()
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if isinstance(name, str):
            names.add(name)
    return frozenset(names)


def text_of(seen: Sequence[Seen]) -> str:
    """Everything ``seen`` holds as text, in order (texts, call arguments, results)."""
    pieces: list[str] = []
    for message in seen:
        pieces.extend(message.texts)
        pieces.extend(call.arguments for call in message.calls)
        pieces.extend(output for _, output in message.results)
    return "\n".join(pieces)


def _texts(content: Any, kinds: tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(content, str):
        return (content,)
    if not isinstance(content, list):
        return ()
    return tuple(
        str(block.get("text", ""))
        for block in content
        if isinstance(block, dict) and block.get("type") in kinds
    )


def _responses(body: dict[str, Any]) -> Iterator[Seen]:
    if isinstance(body.get("instructions"), str):
        yield Seen("system", (body["instructions"],))
    items = body.get("input")
    if isinstance(items, str):
        yield Seen("user", (items,))
        return
    for item in items if isinstance(items, list) else []:
        kind = item.get("type", "message")
        if kind == "message":
            texts = _texts(item.get("content"), ("input_text", "output_text", "text"))
            yield Seen(str(item.get("role")), texts)
        elif kind == "function_call":
            call = Call(str(item["call_id"]), str(item["name"]), str(item.get("arguments", "")))
            yield Seen("assistant", calls=(call,))
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else "\n".join(_texts(output, ("input_text",)))
            yield Seen("tool", results=((str(item["call_id"]), text),))
        elif kind == "reasoning":
            summary = item.get("summary") or []
            yield Seen("assistant", tuple(str(s.get("text", "")) for s in summary))


def _messages(body: dict[str, Any]) -> Iterator[Seen]:
    system = _texts(body.get("system"), ("text",))
    if system:
        yield Seen("system", system)
    for message in body.get("messages", []):
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        texts: list[str] = []
        calls: list[Call] = []
        results: list[tuple[str, str]] = []
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind == "thinking":
                texts.append(str(block.get("thinking", "")))
            elif kind == "tool_use":
                arguments = jsonio.dumps_str(block.get("input", {}))
                calls.append(Call(str(block["id"]), str(block["name"]), arguments))
            elif kind == "tool_result":
                output = "\n".join(_texts(block.get("content"), ("text",)))
                results.append((str(block["tool_use_id"]), output))
        yield Seen(str(message.get("role")), tuple(texts), tuple(calls), tuple(results))


def _chat(body: dict[str, Any]) -> Iterator[Seen]:
    for message in body.get("messages", []):
        role = str(message.get("role"))
        texts = _texts(message.get("content"), ("text",))
        if role == "tool":
            output = "\n".join(texts)
            yield Seen("tool", results=((str(message["tool_call_id"]), output),))
            continue
        calls = tuple(
            Call(str(c["id"]), str(c["function"]["name"]), str(c["function"]["arguments"]))
            for c in message.get("tool_calls") or []
        )
        yield Seen(role, texts, calls)
