"""Tool definitions.

A tool without ``type`` (or with ``type: "custom"``, this wire's name for an ordinary tool) is a
canonical ``function`` tool. Any other ``type`` (``bash_20250124``, ``text_editor_20250728``,
``web_search_20250305`` ...) is a tool the provider defines: it becomes a tool of that kind,
kept whole in ``extra`` and re-emitted exactly, and no other wire can carry it.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, ProtocolError, Tool
from skillstate.protocols.anthropic_messages.cache import cache_json, decode_cache
from skillstate.protocols.fields import (
    merged,
    need_list,
    need_object,
    optional_str,
    required_str,
    split_known,
)

_FUNCTION_KEYS = ("type", "name", "description", "input_schema", "cache_control")


def decode_tools(value: Any, path: str = "tools") -> list[Tool]:
    items = need_list(value, path)
    return [_decode_tool(item, f"{path}[{i}]") for i, item in enumerate(items)]


def _decode_tool(value: Any, path: str) -> Tool:
    tool = need_object(value, path)
    kind = tool.get("type")
    if kind is None or kind == "custom":
        got, extra = split_known(tool, _FUNCTION_KEYS)
        hints: Json = {"type": True} if "type" in got else {}
        return Tool(
            name=required_str(got, "name", path),
            description=optional_str(got, "description", path),
            parameters=need_object(got.get("input_schema"), f"{path}.input_schema"),
            cache=decode_cache(got, path, hints),
            extra=extra,
            hints=hints,
        )
    got, extra = split_known(tool, ("type", "cache_control"))
    kind = required_str(got, "type", path)
    name = extra.get("name")
    hints = {}
    cache = decode_cache(got, path, hints)
    return Tool(
        name=name if isinstance(name, str) else kind,
        kind=kind,
        cache=cache,
        extra=extra,
        hints=hints,
    )


def encode_tool(tool: Tool, native: bool) -> Json:
    """One tool. A ``custom`` (freeform) tool becomes an ordinary tool whose input is
    ``{"input": "<raw text>"}`` (see ``blocks._tool_input``), and a tool with no parameter
    schema takes the empty object schema this wire requires."""
    if tool.kind in ("function", "custom"):
        out: Json = {"type": "custom"} if native and tool.hints.get("type") else {}
        out["name"] = tool.name
        if tool.description is not None:
            out["description"] = tool.description
        if tool.kind == "custom":
            out["input_schema"] = _freeform_schema()
        else:
            out["input_schema"] = tool.parameters or _empty_schema()
    elif native:
        out = {"type": tool.kind}
    else:
        raise ProtocolError(
            f"tool {tool.name!r} of kind {tool.kind!r} has no equivalent on anthropic-messages"
        )
    cache = cache_json(tool, native)
    if cache is not None:
        out["cache_control"] = cache
    return merged(out, tool.extra) if native else out


def _empty_schema() -> Json:
    return {"type": "object", "properties": {}}


def _freeform_schema() -> Json:
    return {
        "type": "object",
        "properties": {"input": {"type": "string"}},
        "required": ["input"],
    }
