"""Tools only one wire knows, on their way to an upstream of another wire.

* A Responses ``namespace`` tool (Codex sends its MCP and agent tools this way) becomes one
  function tool per member, named ``<namespace>__<member>``; calls in the history are renamed
  to match, and calls in the reply are given back their namespace (``restore_namespaces``).
* A hosted tool (Responses ``web_search``, Anthropic ``web_search_20250305``, ...) is run by the
  provider that defines it; another provider cannot run it. It is left out of the request and
  named in the ``x-skillstate-dropped-tools`` reply header, so the omission is never silent.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from skillstate.conversation import Message, Request, Tool, ToolCall, Wire

SEPARATOR = "__"
_PORTABLE = ("function", "custom")


def qualified(namespace: str, name: str) -> str:
    return f"{namespace}{SEPARATOR}{name}"


def portable_request(request: Request, target: Wire) -> tuple[Request, list[str]]:
    """The request with every tool in a form ``target`` can carry, and the tools left out."""
    if request.source is target:
        return request, []
    if all(t.kind in _PORTABLE for t in request.tools) and not _namespaced_calls(request):
        return request, []
    tools: list[Tool] = []
    dropped: list[str] = []
    for tool in request.tools:
        if tool.kind in _PORTABLE:
            tools.append(tool)
        elif tool.kind == "namespace" and isinstance(tool.extra.get("tools"), list):
            tools += _members(tool)
        else:
            dropped.append(tool.name)
    messages = [_qualify_calls(m) for m in request.messages]
    return dataclasses.replace(request, tools=tools, messages=messages), dropped


def _members(namespace: Tool) -> list[Tool]:
    out: list[Tool] = []
    for member in namespace.extra["tools"]:
        if not isinstance(member, dict) or not isinstance(member.get("name"), str):
            continue
        kind = "custom" if member.get("type") == "custom" else "function"
        parameters: Any = member.get("parameters") if kind == "function" else None
        out.append(
            Tool(
                name=qualified(namespace.name, member["name"]),
                description=member.get("description"),
                parameters=parameters if isinstance(parameters, dict) else None,
                kind=kind,
            )
        )
    return out


def _namespaced_calls(request: Request) -> bool:
    return any(
        isinstance(part, ToolCall) and part.namespace
        for message in request.messages
        for part in message.parts
    )


def _qualify_calls(message: Message) -> Message:
    if not any(isinstance(p, ToolCall) and p.namespace for p in message.parts):
        return message
    parts = [
        dataclasses.replace(p, name=qualified(p.namespace, p.name), namespace=None)
        if isinstance(p, ToolCall) and p.namespace
        else p
        for p in message.parts
    ]
    return dataclasses.replace(message, parts=parts)


def namespace_map(request: Request) -> dict[str, tuple[str, str]]:
    """Qualified name -> (namespace, member) for the namespace tools of a client request."""
    found: dict[str, tuple[str, str]] = {}
    for tool in request.tools:
        members = tool.extra.get("tools") if tool.kind == "namespace" else None
        for member in members if isinstance(members, list) else []:
            if isinstance(member, dict) and isinstance(member.get("name"), str):
                found[qualified(tool.name, member["name"])] = (tool.name, member["name"])
    return found


def restore_namespace(call: ToolCall, names: dict[str, tuple[str, str]]) -> ToolCall:
    """A reply's call to a flattened member, given back its namespace."""
    if call.name not in names:
        return call
    restored = copy.copy(call)
    restored.namespace, restored.name = names[call.name]
    return restored


def choices(request: Request) -> int:
    """How many alternative replies the request asks for (Chat's ``n``; 1 elsewhere)."""
    n = request.params.candidates
    return n if n is not None and n > 1 else 1
