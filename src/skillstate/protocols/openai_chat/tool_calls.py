"""Assistant ``tool_calls`` entries and the tool kinds of the client's request.

``{id, type:"function", function:{name, arguments}}`` is a ``ToolCall``; ``{id, type:"custom",
custom:{name, input}}`` is a ``ToolCall`` of kind ``custom`` whose ``arguments`` is the raw
input. Any other type is an ``Opaque`` part hinted ``{"in": "tool_calls"}``, so it goes back
into ``tool_calls`` and not into ``content``. ``extra`` holds the unknown keys of the entry plus
``{"function"|"custom": {unknown inner keys}}`` when there are any.

Wires without freeform tools carry a custom call as the JSON ``{"input": "..."}`` under kind
``function``; ``custom_input`` unwraps it when the client declared that tool as custom.
"""

from __future__ import annotations

import json
from typing import Any

from skillstate.conversation import Json, Opaque, Part, Request, ToolCall, Wire
from skillstate.protocols.fields import (
    at,
    need_object,
    need_str,
    required_object,
    required_str,
    without,
)

_INNER = {"function": ("name", "arguments"), "custom": ("name", "input")}


def decode_tool_call(raw: Any, path: str) -> Part:
    item = need_object(raw, path)
    kind = item.get("type", "function")
    if kind is not None:
        need_str(kind, at(path, "type"))
    if kind not in _INNER:
        return Opaque(Wire.CHAT, item, hints={"in": "tool_calls"})
    call_id = required_str(item, "id", path)
    inner = required_object(item, kind, path)
    inner_path = at(path, kind)
    name = required_str(inner, "name", inner_path)
    text = required_str(inner, _INNER[kind][1], inner_path)
    extra = without(item, "id", "type", kind)
    inner_extra = without(inner, *_INNER[kind])
    if inner_extra:
        extra[kind] = inner_extra
    hints: Json = {} if "type" in item else {"untyped": True}
    return ToolCall(call_id, name, text, kind=kind, extra=extra, hints=hints)


def encode_tool_call(call: ToolCall, native: bool, custom_names: frozenset[str]) -> Json:
    """One ``tool_calls`` entry. ``custom_names`` are the client's custom tools: a call to one
    that another wire carried as a function call is given back in the custom shape."""
    if call.kind == "custom":
        kind, text = "custom", call.arguments
    elif call.name in custom_names and not native:
        kind, text = "custom", custom_input(call.arguments)
    else:
        kind, text = "function", call.arguments
    extra = call.extra if native else {}
    inner = {**extra.get(kind, {}), "name": call.name, _INNER[kind][1]: text}
    out: Json = {**without(extra, kind), "id": call.id, "type": kind, kind: inner}
    if native and call.hints.get("untyped") and kind == "function":
        del out["type"]
    return out


def custom_input(arguments: str) -> str:
    """The raw input of a custom call another wire sent as ``{"input": "..."}``."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get("input"), str):
        text: str = value["input"]
        return text
    return arguments


def custom_tool_names(request: Request | None) -> frozenset[str]:
    """Names of the freeform tools the client offered (empty without a request)."""
    if request is None:
        return frozenset()
    return frozenset(tool.name for tool in request.tools if tool.kind == "custom")
