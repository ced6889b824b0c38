"""The assistant side of the Responses wire: output items (assistant ``message``,
``function_call``, ``custom_tool_call``, ``reasoning``, hosted-tool items) to the parts of one
canonical assistant turn and back.

Grouping contract: a turn's parts keep the item order. Each content part of a message item is
its own ``Text`` (or ``Opaque``) part whose hints hold ``seq`` (the ordinal of the item it came
from, shared by the parts of one item) and ``item`` (that item without its ``content``: id,
status, role, phase...), so encoding regroups exactly the items it read. A message whose
``content`` was a string has one part hinted ``string``; one with ``content: []`` has one empty
``Text`` hinted ``empty``. Calls and reasoning items are one part each, their other fields in
``extra``. An item the model has no type for is an ``Opaque`` part hinted ``item``.

Reasoning: ``text`` is the ``summary_text`` parts joined by a blank line (or, with no summary,
the raw ``reasoning_text`` content, hinted ``from_content``); hints keep each piece's length so
an untouched summary splits back into the same parts; ``signature`` is ``encrypted_content``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator

from skillstate.conversation import (
    Image,
    Json,
    Opaque,
    Part,
    ProtocolError,
    Reasoning,
    Text,
    ToolCall,
    Wire,
)
from skillstate.protocols.fields import (
    need_object,
    need_text_or_list,
    optional_list,
    optional_str,
    required_list,
    required_str,
    without,
)
from skillstate.protocols.openai_responses.content import decode_part, encode_part, opaque_data
from skillstate.support import jsonio

#: Item types that make up a model turn on this wire.
TURN_TYPES = frozenset({"function_call", "custom_tool_call", "reasoning"})

#: ``(prefix, seed) -> id`` for items another wire gave no id.
IdMaker = Callable[[str, str], str]

_SEPARATOR = "\n\n"


def content_id(prefix: str, seed: str) -> str:
    """A stable id from what the item holds, so a re-sent history keeps identical bytes."""
    return f"{prefix}_{hashlib.sha256(seed.encode()).hexdigest()[:32]}"


def is_turn_item(item: Json) -> bool:
    kind = item.get("type")
    if kind in TURN_TYPES:
        return True
    return kind in ("message", None) and item.get("role") == "assistant"


def decode_item(item: Json, seq: int, path: str) -> list[Part]:
    """One output item as the parts it contributes to a turn."""
    kind = item.get("type")
    if kind in ("message", None) and "role" in item:
        return _decode_message(item, seq, path)
    if kind == "function_call":
        return [_decode_call(item, path, "arguments", "function")]
    if kind == "custom_tool_call":
        return [_decode_call(item, path, "input", "custom")]
    if kind == "reasoning":
        return [_decode_reasoning(item, path)]
    return [Opaque(Wire.RESPONSES, item, hints={"item": True})]


def _decode_message(item: Json, seq: int, path: str) -> list[Part]:
    shell = without(item, "content")
    content = item.get("content")
    if isinstance(content, str):
        return [Text(content, hints={"seq": seq, "item": shell, "string": True})]
    parts = need_text_or_list(content, f"{path}.content", "content parts")
    if not parts:
        return [Text("", hints={"seq": seq, "item": shell, "empty": True})]
    decoded: list[Part] = [
        decode_part(part, f"{path}.content[{i}]") for i, part in enumerate(parts)
    ]
    for part in decoded:
        if isinstance(part, Text | Image | Opaque):
            part.hints.update(seq=seq, item=shell)
    return decoded


def _decode_call(item: Json, path: str, key: str, kind: str) -> ToolCall:
    call_id = required_str(item, "call_id", path)
    name = required_str(item, "name", path)
    arguments = required_str(item, key, path)
    extra = without(item, "type", "call_id", "name", key)
    namespace = extra.get("namespace")
    namespace = namespace if isinstance(namespace, str) else None
    return ToolCall(call_id, name, arguments, kind=kind, namespace=namespace, extra=extra)


def _decode_reasoning(item: Json, path: str) -> Reasoning:
    summary = required_list(item, "summary", path)
    hints: Json = {}
    texts = _pieces(summary, f"{path}.summary", hints, "summary")
    skip = ["type", "summary", "encrypted_content"]
    content = optional_list(item, "content", path)
    if not texts and content:
        texts = _pieces(content, f"{path}.content", hints, "content")
        skip.append("content")
    signature = optional_str(item, "encrypted_content", path)
    if signature is None and "encrypted_content" in item:
        hints["null_signature"] = True
    text = _SEPARATOR.join(texts)
    return Reasoning(
        text=text,
        signature=signature,
        redacted=not text and signature is not None,
        extra=without(item, *skip),
        hints=hints,
    )


def _pieces(pieces: list[object], path: str, hints: Json, key: str) -> list[str]:
    texts: list[str] = []
    shells: list[Json] = []
    for i, piece in enumerate(pieces):
        body = need_object(piece, f"{path}[{i}]")
        texts.append(required_str(body, "text", f"{path}[{i}]"))
        shells.append(without(body, "text"))
    hints[key] = shells
    hints[f"{key}_lengths"] = [len(t) for t in texts]
    return texts


def encode_items(
    parts: list[Part],
    *,
    own: bool,
    custom: frozenset[str],
    ids: IdMaker | None,
) -> list[Json]:
    """The items of one turn. ``own``: the parts came from this wire (re-emit hints and extra).
    ``custom``: tool names that are freeform on the client's side. ``ids``: make ids for items
    another wire gave none (response bodies need them); None leaves them out (requests)."""
    items: list[Json] = []
    for group in _groups(parts, own):
        first = group[0]
        if isinstance(first, Text | Image) or (isinstance(first, Opaque) and "seq" in first.hints):
            items.append(_encode_message(group, own=own, ids=ids))
        elif isinstance(first, ToolCall):
            items.append(encode_call(first, own=own, custom=custom, ids=ids))
        elif isinstance(first, Reasoning):
            item = encode_reasoning(first, own=own, ids=ids)
            if item is not None:
                items.append(item)
        elif isinstance(first, Opaque):
            items.append(opaque_data(first))
        else:
            raise ProtocolError(f"A {type(first).__name__} part cannot be in a model turn.")
    return items


def _groups(parts: list[Part], own: bool) -> Iterator[list[Part]]:
    """Consecutive content parts of one message item together, every other part alone."""
    group: list[Part] = []
    key: object = None
    for part in parts:
        part_key = _message_key(part, own)
        if group and part_key is not None and part_key == key:
            group.append(part)
            continue
        if group:
            yield group
        group, key = [part], part_key
    if group:
        yield group


def _message_key(part: Part, own: bool) -> object:
    """Which message item a part belongs to: its ``seq`` hint, or "new" for unhinted text."""
    if isinstance(part, Text | Image | Opaque):
        if own and "seq" in part.hints:
            return part.hints["seq"]
        if isinstance(part, Text | Image):
            return "new"
    return None


def _encode_message(group: list[Part], *, own: bool, ids: IdMaker | None) -> Json:
    first = group[0]
    hints = first.hints if own and isinstance(first, Text | Image | Opaque) else {}
    shell = hints.get("item")
    if shell is None:
        return _new_message(group, ids)
    if len(group) == 1 and isinstance(first, Text):
        if hints.get("string"):
            return {**shell, "content": first.text}
        if hints.get("empty") and not first.text:
            return {**shell, "content": []}
    content = [encode_part(p, own=True, default="output_text") for p in group]
    return {**shell, "content": content}


def _new_message(group: Iterable[Part], ids: IdMaker | None) -> Json:
    """A message item for text of another wire, in the output-message form the SDK's input
    types accept for assistant text (id, status, annotations); ``logprobs`` only in responses."""
    content: list[Json] = []
    for part in group:
        if not isinstance(part, Text):
            raise ProtocolError("An assistant message cannot carry images on the Responses wire.")
        text: Json = {"type": "output_text", "annotations": [], "text": part.text}
        if ids is not None:
            text["logprobs"] = []
        content.append(text)
    seed = "".join(c["text"] for c in content)
    return {
        "id": (ids or content_id)("msg", seed),
        "type": "message",
        "status": "completed",
        "content": content,
        "role": "assistant",
    }


def custom_input(arguments: str) -> str:
    """A freeform call's raw input from another wire's ``{"input": "..."}`` arguments."""
    try:
        value = jsonio.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get("input"), str):
        return str(value["input"])
    return arguments


def encode_call(call: ToolCall, *, own: bool, custom: frozenset[str], ids: IdMaker | None) -> Json:
    if own:
        if call.kind == "custom":
            return {
                "type": "custom_tool_call",
                **call.extra,
                "call_id": call.id,
                "name": call.name,
                "input": call.arguments,
            }
        return {
            "type": "function_call",
            **call.extra,
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments,
        }
    item: Json = {}
    freeform = call.kind == "custom" or call.name in custom
    if ids is not None:
        item["id"] = ids("ctc" if freeform else "fc", call.id)
    if freeform:
        item.update(type="custom_tool_call", call_id=call.id, name=call.name)
        item["input"] = custom_input(call.arguments)
        return item
    item.update(type="function_call", call_id=call.id, name=call.name)
    if call.namespace:
        item["namespace"] = call.namespace
    item["arguments"] = call.arguments
    if ids is not None:
        item["status"] = "completed"
    return item


def encode_reasoning(part: Reasoning, *, own: bool, ids: IdMaker | None) -> Json | None:
    """A reasoning item, or None for reasoning from another wire that cannot be carried.

    In a request (``ids`` None) reasoning from another wire needs its opaque token: the API
    replays only ``encrypted_content`` and answers an item with text and an id it never issued
    as not found, so text-only reasoning is left out there. In a reply to the client its text
    is shown as a summary."""
    if not own:
        if part.signature is None and (ids is None or not part.text):
            return None
        item: Json = {"id": (ids or content_id)("rs", part.signature or part.text)}
        item.update(type="reasoning", summary=summary(part.text, None, None))
        if part.signature is not None:
            item["encrypted_content"] = part.signature
        return item
    hints = part.hints
    item = {"type": "reasoning", **part.extra}
    if "content" in hints:
        item["summary"] = []
        lengths = hints.get("content_lengths")
        item["content"] = summary(part.text, hints["content"], lengths, "reasoning_text")
    else:
        item["summary"] = summary(part.text, hints.get("summary"), hints.get("summary_lengths"))
    if part.signature is not None:
        item["encrypted_content"] = part.signature
    elif hints.get("null_signature"):
        item["encrypted_content"] = None
    return item


def summary(
    text: str, shells: list[Json] | None, lengths: list[int] | None, kind: str = "summary_text"
) -> list[Json]:
    """The pieces of a reasoning text, split as they arrived when the text is untouched."""
    if shells is not None and lengths is not None and len(shells) == len(lengths):
        pieces = _split(text, lengths)
        if pieces is not None:
            return [{**shell, "text": piece} for shell, piece in zip(shells, pieces, strict=True)]
    return [{"type": kind, "text": text}] if text else []


def _split(text: str, lengths: list[int]) -> list[str] | None:
    if sum(lengths) + len(_SEPARATOR) * max(len(lengths) - 1, 0) != len(text):
        return None
    pieces: list[str] = []
    start = 0
    for i, length in enumerate(lengths):
        if i and text[start - len(_SEPARATOR) : start] != _SEPARATOR:
            return None
        pieces.append(text[start : start + length])
        start += length + len(_SEPARATOR)
    return pieces
