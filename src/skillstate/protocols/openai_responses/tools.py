"""Tools and ``tool_choice`` on the Responses wire.

``function`` tools map to ``Tool(kind="function")`` (``strict`` and the rest in ``extra``) and
``custom`` (freeform) tools to ``Tool(kind="custom")`` (``format`` in ``extra``). Every other
type (``namespace`` of MCP tools, ``web_search``, ``local_shell``, ``mcp``...) is
``Tool(kind=<type>, name=<its name or type>, extra=<the whole tool>)`` and passes through to this
wire only. Hints: ``keys`` lists which of ``description`` / ``parameters`` were present, so a
null and an absent key re-encode as they came.
"""

from __future__ import annotations

from skillstate.conversation import Json, ProtocolError, Tool, ToolChoice
from skillstate.protocols.fields import (
    fail,
    need_object,
    optional_object,
    optional_str,
    required_str,
    without,
)

_MODES = ("auto", "none", "required")
_EMPTY_SCHEMA: Json = {"type": "object", "properties": {}}


def decode_tools(tools: list[object]) -> list[Tool]:
    return [_decode_tool(tool, f"tools[{i}]") for i, tool in enumerate(tools)]


def _decode_tool(raw: object, path: str) -> Tool:
    tool = need_object(raw, path)
    kind = required_str(tool, "type", path)
    if kind not in ("function", "custom"):
        name = optional_str(tool, "name", path)
        return Tool(name=name or kind, kind=kind, extra=tool)
    name = required_str(tool, "name", path)
    description = optional_str(tool, "description", path)
    parameters = optional_object(tool, "parameters", path) if kind == "function" else None
    modelled = ("description", "parameters") if kind == "function" else ("description",)
    return Tool(
        name=name,
        description=description,
        parameters=parameters,
        kind=kind,
        extra=without(tool, "type", "name", *modelled),
        hints={"keys": [key for key in modelled if key in tool]},
    )


def encode_tools(tools: list[Tool], *, own: bool) -> list[Json]:
    return [_encode_tool(tool, own=own) for tool in tools]


def _encode_tool(tool: Tool, *, own: bool) -> Json:
    if tool.kind not in ("function", "custom"):
        if not own:
            raise ProtocolError(f"The {tool.kind} tool {tool.name!r} has no Responses equivalent.")
        return tool.extra
    body: Json = {"type": tool.kind, "name": tool.name}
    keys = tool.hints.get("keys", ()) if own else ()
    if tool.description is not None or "description" in keys:
        body["description"] = tool.description
    if tool.kind == "function":
        if own:
            if tool.parameters is not None or "parameters" in keys:
                body["parameters"] = tool.parameters
        else:
            body["parameters"] = tool.parameters or _EMPTY_SCHEMA
            # Responses defaults to strict schemas, which another wire's schemas rarely meet.
            body["strict"] = False
    if own:
        body.update(tool.extra)
    return body


def decode_tool_choice(value: object) -> tuple[ToolChoice | None, str | None]:
    """The choice, and the Responses type of a named tool (``function`` or ``custom``). A
    shape the model does not name (``allowed_tools``, a hosted tool) gives (None, None) and
    stays in the request's ``extra``."""
    if isinstance(value, str):
        if value not in _MODES:
            raise fail(
                "tool_choice", f"must be one of {', '.join(_MODES)} or an object, not {value!r}"
            )
        return ToolChoice(mode=value), None  # type: ignore[arg-type]
    choice = need_object(value, "tool_choice")
    kind = required_str(choice, "type", "tool_choice")
    if kind in ("function", "custom") and set(choice) == {"type", "name"}:
        name = required_str(choice, "name", "tool_choice")
        return ToolChoice(mode="tool", name=name), kind
    return None, None


def encode_tool_choice(choice: ToolChoice, tools: list[Tool], kind: str | None) -> str | Json:
    """``kind`` is the type a named choice had on this wire; otherwise it follows the kind of
    the tool of that name."""
    if choice.mode != "tool":
        return choice.mode
    if kind is None:
        custom = any(t.kind == "custom" and t.name == choice.name for t in tools)
        kind = "custom" if custom else "function"
    return {"type": kind, "name": choice.name}
