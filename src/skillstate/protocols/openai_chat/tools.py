"""The ``tools`` array and ``tool_choice``.

``{type:"function", function:{name, description, parameters, ...}}`` is a ``Tool`` of kind
``function``; ``{type:"custom", custom:{name, description, format}}`` one of kind ``custom``.
Their ``extra`` holds the unknown keys of the entry plus ``{"function"|"custom": {unknown
inner keys}}`` (``strict``, ``format``) when there are any. Any other tool type is a ``Tool``
of that kind holding the whole entry in ``extra``: this wire re-emits it, another wire's tool of
such a kind is refused.

``tool_choice``: ``auto``, ``none``, ``required`` and a named function or custom tool map to
``ToolChoice``; any other object (``allowed_tools``) stays in the request's ``extra``.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, ProtocolError, Tool, ToolChoice
from skillstate.protocols.fields import (
    at,
    fail,
    need_list,
    need_object,
    optional_object,
    optional_str,
    required_object,
    required_str,
    without,
)
from skillstate.protocols.openai_chat.nulls import note_nulls, nulls_of, put, sent_null

_MODES = ("auto", "none", "required")
_KINDS = ("function", "custom")


def decode_tools(value: Any, path: str) -> list[Tool]:
    items = need_list(value, path)
    return [_decode_tool(item, at(path, i)) for i, item in enumerate(items)]


def _decode_tool(value: Any, path: str) -> Tool:
    raw = need_object(value, path)
    kind = required_str(raw, "type", path)
    if kind not in _KINDS:
        name = raw.get("name")
        return Tool(name if isinstance(name, str) else kind, kind=kind, extra=raw)
    inner = required_object(raw, kind, path)
    inner_path = at(path, kind)
    name = required_str(inner, "name", inner_path)
    description = optional_str(inner, "description", inner_path)
    parameters = None
    modelled: tuple[str, ...] = ("name", "description")
    if kind == "function":
        parameters = optional_object(inner, "parameters", inner_path)
        modelled = ("name", "description", "parameters")
    extra = without(raw, "type", kind)
    inner_extra = without(inner, *modelled)
    if inner_extra:
        extra[kind] = inner_extra
    hints = note_nulls({}, sent_null(inner, modelled[1:]))
    return Tool(name, description, parameters, kind=kind, extra=extra, hints=hints)


def encode_tools(tools: list[Tool], native: bool) -> list[Json]:
    return [_encode_tool(tool, native, i) for i, tool in enumerate(tools)]


def _encode_tool(tool: Tool, native: bool, index: int) -> Json:
    if tool.kind not in _KINDS:
        if native and tool.extra:
            return tool.extra
        raise ProtocolError(
            f"a tool of type {tool.kind!r} cannot be offered on the Chat wire",
            param=f"tools[{index}]",
        )
    extra = tool.extra if native else {}
    nulls = nulls_of(tool.hints) if native else ()
    inner: Json = {**extra.get(tool.kind, {}), "name": tool.name}
    put(inner, "description", tool.description, nulls)
    if tool.kind == "function":
        put(inner, "parameters", tool.parameters, nulls)
    return {**without(extra, tool.kind), "type": tool.kind, tool.kind: inner}


def decode_tool_choice(value: Any, path: str) -> ToolChoice | None:
    """The canonical choice, or None when it is a shape the model does not name."""
    if isinstance(value, str):
        if value not in _MODES:
            raise fail(path, f"must be one of {', '.join(_MODES)} or an object")
        return ToolChoice(value)  # type: ignore[arg-type]
    raw = need_object(value, path)
    kind = required_str(raw, "type", path)
    if kind not in _KINDS:
        return None
    inner = required_object(raw, kind, path)
    return ToolChoice("tool", required_str(inner, "name", at(path, kind)))


def encode_tool_choice(choice: ToolChoice, tools: list[Tool]) -> Any:
    if choice.mode != "tool":
        return choice.mode
    kinds = {tool.name: tool.kind for tool in tools}
    kind = "custom" if kinds.get(choice.name or "") == "custom" else "function"
    return {"type": kind, kind: {"name": choice.name}}
