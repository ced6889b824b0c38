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
from skillstate.protocols.openai_chat import fields as f

_MODES = ("auto", "none", "required")
_KINDS = ("function", "custom")


def decode_tools(value: Any, path: str) -> list[Tool]:
    items = f.want(value, f.is_list, path)
    return [_decode_tool(item, f.join(path, i)) for i, item in enumerate(items)]


def _decode_tool(value: Any, path: str) -> Tool:
    raw = f.want(value, f.is_object, path)
    kind = f.required(raw, "type", f.is_str, path)
    if kind not in _KINDS:
        name = raw.get("name")
        return Tool(name if isinstance(name, str) else kind, kind=kind, extra=raw)
    inner = f.required(raw, kind, f.is_object, path)
    inner_path = f.join(path, kind)
    name = f.required(inner, "name", f.is_str, inner_path)
    nulls: set[str] = set()
    description = f.optional(inner, "description", f.is_str, inner_path, nulls)
    parameters = None
    modelled: tuple[str, ...] = ("name", "description")
    if kind == "function":
        parameters = f.optional(inner, "parameters", f.is_object, inner_path, nulls)
        modelled = ("name", "description", "parameters")
    extra = f.rest(raw, ("type", kind))
    inner_extra = f.rest(inner, modelled)
    if inner_extra:
        extra[kind] = inner_extra
    hints = f.note_nulls({}, nulls)
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
    nulls = f.nulls_of(tool.hints) if native else ()
    inner: Json = {**extra.get(tool.kind, {}), "name": tool.name}
    f.put(inner, "description", tool.description, nulls)
    if tool.kind == "function":
        f.put(inner, "parameters", tool.parameters, nulls)
    return {**f.rest(extra, (tool.kind,)), "type": tool.kind, tool.kind: inner}


def decode_tool_choice(value: Any, path: str) -> ToolChoice | None:
    """The canonical choice, or None when it is a shape the model does not name."""
    if isinstance(value, str):
        if value not in _MODES:
            f.fail(path, f"must be one of {', '.join(_MODES)} or an object")
        return ToolChoice(value)  # type: ignore[arg-type]
    raw = f.want(value, f.is_object, path)
    kind = f.required(raw, "type", f.is_str, path)
    if kind not in _KINDS:
        return None
    inner = f.required(raw, kind, f.is_object, path)
    return ToolChoice("tool", f.required(inner, "name", f.is_str, f.join(path, kind)))


def encode_tool_choice(choice: ToolChoice, tools: list[Tool]) -> Any:
    if choice.mode != "tool":
        return choice.mode
    kinds = {tool.name: tool.kind for tool in tools}
    kind = "custom" if kinds.get(choice.name or "") == "custom" else "function"
    return {"type": kind, kind: {"name": choice.name}}
