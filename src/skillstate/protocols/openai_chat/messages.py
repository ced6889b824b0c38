"""Chat messages to canonical ``Message`` objects.

* ``system``, ``developer``, ``user``: their content parts.
* ``assistant``: one canonical message with parts ``[Reasoning?, content parts..., tool
  calls...]``. ``reasoning_content`` or ``reasoning`` (strings some compatible providers send)
  become the ``Reasoning`` part, hinted with the key it came under. ``refusal``, ``audio``,
  ``name``, ``function_call``... stay in ``extra``.
* ``tool``: ``Message(role="tool", parts=[ToolResult(tool_call_id, content)])``.
* the legacy ``function`` role: a ``tool`` message holding the whole wire message as one
  ``Opaque`` part (hinted ``{"message": "opaque"}``), re-emitted exactly by this wire only.

Hints: ``content`` (the content's shape), ``tool_calls`` (``null`` or ``empty`` when sent so),
``null`` (keys sent as null).
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import (
    Image,
    Json,
    Message,
    Opaque,
    Part,
    Reasoning,
    Role,
    Text,
    ToolResult,
    Wire,
)
from skillstate.protocols.fields import at, fail, need_list, need_object, required_str, without
from skillstate.protocols.memo import ItemMemo, decode_items
from skillstate.protocols.openai_chat.content import decode_content
from skillstate.protocols.openai_chat.tool_calls import decode_tool_call

REASONING_KEYS = ("reasoning_content", "reasoning")
_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: The roles whose messages are just their content.
_CONTENT_ROLES: dict[str, Role] = {"system": "system", "developer": "developer", "user": "user"}


def decode_messages(value: Any, path: str, memo: ItemMemo | None = None) -> list[Message]:
    return decode_items(need_list(value, path), path, decode_message, memo)


def decode_message(value: Any, path: str) -> Message:
    raw = need_object(value, path)
    role = required_str(raw, "role", path)
    if role == "assistant":
        return decode_assistant(raw, path)
    if role == "tool":
        return _decode_tool(raw, path)
    if role == "function":
        return Message("tool", [Opaque(Wire.CHAT, raw)], hints={"message": "opaque"})
    plain_role = _CONTENT_ROLES.get(role)
    if plain_role is None:
        raise fail(at(path, "role"), f"must be one of {', '.join(_ROLES[:-1])}")
    parts, shape = decode_content(raw, path)
    extra = without(raw, "role", "content")
    return Message(plain_role, parts, extra=extra, hints={"content": shape})


def decode_assistant(raw: Json, path: str) -> Message:
    """An assistant message of a request, or the message of a response choice."""
    parts: list[Part] = []
    known = ["role", "content", "tool_calls"]
    hints: Json = {}
    for key in REASONING_KEYS:
        if isinstance(raw.get(key), str):
            parts.append(Reasoning(raw[key], hints={"key": key}))
            known.append(key)
            break
    content, hints["content"] = decode_content(raw, path)
    parts.extend(content)
    calls = raw.get("tool_calls")
    if calls is None:
        if "tool_calls" in raw:
            hints["tool_calls"] = "null"
    else:
        calls_path = at(path, "tool_calls")
        need_list(calls, calls_path)
        if not calls:
            hints["tool_calls"] = "empty"
        parts.extend(decode_tool_call(item, at(calls_path, i)) for i, item in enumerate(calls))
    if "role" not in raw:
        hints["no_role"] = True
    return Message("assistant", parts, extra=without(raw, *known), hints=hints)


def _decode_tool(raw: Json, path: str) -> Message:
    call_id = required_str(raw, "tool_call_id", path)
    parts, shape = decode_content(raw, path)
    content: list[Text | Image | Opaque] = []
    for i, part in enumerate(parts):
        if not isinstance(part, Text | Image):
            raise fail(f"{path}.content[{i}]", "must be a text part: a tool message holds text")
        content.append(part)
    result = ToolResult(call_id, content, hints={"content": shape})
    return Message("tool", [result], extra=without(raw, "role", "content", "tool_call_id"))
