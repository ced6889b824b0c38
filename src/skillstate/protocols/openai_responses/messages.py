"""The ``input`` item list to canonical messages and back.

Consecutive assistant-side items form one assistant message (see ``turns``). Each
``function_call_output`` / ``custom_tool_call_output`` item is its own ``tool`` message with one
``ToolResult`` (hinted ``list`` when its output was a list of parts; a part the model has no
type for, an ``input_file``, is an ``Opaque`` item of the result); each user, system or
developer message item is one message (hints: ``no_type`` when the item had no
``"type": "message"``, ``string`` when its content was a string). Any other item
(``item_reference``, ``compaction``, ``web_search_call``, ``local_shell_call_output``...) is
an ``Opaque`` part hinted ``item``, alone in a message whose role is ``assistant`` for
``*_call`` items and ``user`` otherwise, so it is re-emitted exactly where it was.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from skillstate.conversation import (
    Image,
    Json,
    Message,
    Opaque,
    Part,
    ProtocolError,
    Role,
    Text,
    ToolCall,
    ToolResult,
    Wire,
)
from skillstate.protocols.fields import (
    fail,
    need_object,
    need_text_or_list,
    optional_str,
    required_str,
    without,
)
from skillstate.protocols.memo import ItemMemo
from skillstate.protocols.openai_responses.content import decode_part, encode_part, opaque_data
from skillstate.protocols.openai_responses.turns import decode_item, encode_items, is_turn_item

_ROLES = ("user", "system", "developer", "assistant")
_OUTPUTS = {"function_call_output": "function", "custom_tool_call_output": "custom"}


def decode_input(items: list[object], memo: ItemMemo | None = None) -> list[Message]:
    """The input's items as messages: a run of an assistant turn's items (its reasoning, text
    and calls) is one message. ``memo``: the session's previous input (``protocols.memo``)."""
    if memo is None:
        return _decode_from(items, 0)[0]
    return memo.groups(items, lambda start: _decode_from(items, start))


def _decode_from(items: list[object], start: int) -> tuple[list[Message], list[int]]:
    """The messages of ``items[start:]`` (``start`` begins a message), and the item each
    message begins at."""
    messages: list[Message] = []
    starts: list[int] = []
    turn: Message | None = None
    for i in range(start, len(items)):
        path = f"input[{i}]"
        item = need_object(items[i], path)
        kind = optional_str(item, "type", path)
        if kind in ("message", None) and "role" in item:
            role = required_str(item, "role", path)
            if role not in _ROLES:
                raise fail(f"{path}.role", f"must be one of {', '.join(_ROLES)}, not {role!r}")
        if is_turn_item(item):
            if turn is None:
                turn = Message("assistant", [])
                messages.append(turn)
                starts.append(i)
            turn.parts.extend(decode_item(item, i, path))
            continue
        turn = None
        messages.append(_decode_other(item, kind, path))
        starts.append(i)
    return messages, starts


def _decode_other(item: Json, kind: str | None, path: str) -> Message:
    if kind in ("message", None) and "role" in item:
        return _decode_message(item, path)
    if kind in _OUTPUTS:
        return Message("tool", [_decode_output(item, _OUTPUTS[kind], path)])
    role: Role = "assistant" if kind is not None and kind.endswith("_call") else "user"
    return Message(role, [Opaque(Wire.RESPONSES, item, hints={"item": True})])


def _decode_message(item: Json, path: str) -> Message:
    hints: Json = {} if "type" in item else {"no_type": True}
    content = item.get("content")
    parts: list[Part]
    if isinstance(content, str):
        hints["string"] = True
        parts = [Text(content)]
    else:
        blocks = need_text_or_list(content, f"{path}.content", "content parts")
        parts = [decode_part(b, f"{path}.content[{i}]") for i, b in enumerate(blocks)]
    extra = without(item, "type", "role", "content")
    role: Role = item["role"]
    return Message(role, parts, extra=extra, hints=hints)


def _decode_output(item: Json, kind: str, path: str) -> ToolResult:
    """A tool output item; a part the model has no type for (an ``input_file``) is an
    ``Opaque`` item of the result, so the result still answers its call."""
    call_id = required_str(item, "call_id", path)
    output = item.get("output")
    hints: Json = {}
    content: list[Text | Image | Opaque]
    if isinstance(output, str):
        content = [Text(output)]
    elif isinstance(output, list):
        hints["list"] = True
        content = [decode_part(block, f"{path}.output[{i}]") for i, block in enumerate(output)]
    else:
        raise fail(f"{path}.output", "must be a string or an array")
    extra = without(item, "type", "call_id", "output")
    return ToolResult(call_id, content, kind=kind, extra=extra, hints=hints)


def encode_input(messages: list[Message], *, own: bool, custom: frozenset[str]) -> list[Json]:
    """The ``input`` list. ``own``: the messages came from this wire. ``custom``: the names of
    the request's freeform tools, so calls and results of another wire map to custom items."""
    freeform = _freeform_calls(messages, custom)
    items: list[Json] = []
    for message in messages:
        if message.role == "assistant":
            items.extend(encode_items(message.parts, own=own, custom=custom, ids=None))
            continue
        for part in message.parts:
            if isinstance(part, ToolResult):
                items.append(encode_result(part, own=own, freeform=freeform))
            elif message.role == "tool":
                raise ProtocolError("A tool message may only hold tool results.")
        rest = [p for p in message.parts if not isinstance(p, ToolResult)]
        if rest or (message.role != "tool" and not message.parts):
            items.extend(_encode_message(message, rest, own=own))
    return items


def _freeform_calls(messages: list[Message], custom: frozenset[str]) -> frozenset[str]:
    """Ids of the calls that went to freeform tools (their results are custom outputs)."""
    return frozenset(
        part.id
        for message in messages
        for part in message.parts
        if isinstance(part, ToolCall) and (part.kind == "custom" or part.name in custom)
    )


def _encode_message(message: Message, parts: Sequence[Part], *, own: bool) -> Iterator[Json]:
    """A user, system or developer message: item-level Opaque parts are their own items, the
    other parts are the content of message items between them."""
    content: list[Part] = []
    for part in parts:
        if isinstance(part, Opaque) and part.hints.get("item"):
            if content:
                yield _message_item(message, content, own=own)
                content = []
            yield opaque_data(part)
        else:
            content.append(part)
    if content or not parts:
        yield _message_item(message, content, own=own)


def _message_item(message: Message, parts: Sequence[Part], *, own: bool) -> Json:
    role = "user" if message.role == "tool" else message.role
    if not own:
        blocks = [encode_part(p, own=False, default="input_text") for p in parts]
        return {"type": "message", "role": role, "content": blocks}
    item: Json = {} if message.hints.get("no_type") else {"type": "message"}
    item["role"] = role
    if message.hints.get("string") and len(parts) == 1 and isinstance(parts[0], Text):
        item["content"] = parts[0].text
    else:
        item["content"] = [encode_part(p, own=True, default="input_text") for p in parts]
    item.update(message.extra)
    return item


def encode_result(result: ToolResult, *, own: bool, freeform: frozenset[str]) -> Json:
    """A tool output item: one text (or none) is a string ``output`` unless it came as a list,
    anything else a list of parts (an ``Opaque`` item of another wire is refused, by type).
    ``is_error`` has no field on this wire; the result's text is what tells the model."""
    custom = result.kind == "custom" or (not own and result.call_id in freeform)
    item: Json = {"type": "custom_tool_call_output" if custom else "function_call_output"}
    if own:
        item.update(result.extra)
    item["call_id"] = result.call_id
    content = result.content
    listed = own and result.hints.get("list")
    if not listed and len(content) <= 1 and all(isinstance(p, Text) for p in content):
        only = content[0] if content else None
        item["output"] = only.text if isinstance(only, Text) else ""
    else:
        item["output"] = [encode_part(p, own=own, default="input_text") for p in content]
    return item
