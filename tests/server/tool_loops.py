"""Client bodies of a tool loop on each wire: a task, then one ``shell`` call and its output per
step, as Chat, Messages and Responses clients send them."""

from __future__ import annotations

from typing import Any

ROUTES = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}


def tool_loop(wire: str, stream: bool, task: str, outputs: list[tuple[str, str]]) -> dict[str, Any]:
    """The body asking for the step after ``outputs`` (``(call id, output)`` each, in order)."""
    history: list[dict[str, Any]] = []
    for call_id, output in outputs:
        if wire == "chat":
            call = {"id": call_id, "type": "function",
                    "function": {"name": "shell", "arguments": "{}"}}  # fmt: skip
            history += [
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call_id, "content": output},
            ]
        elif wire == "messages":
            use = {"type": "tool_use", "id": call_id, "name": "shell", "input": {}}
            result = {"type": "tool_result", "tool_use_id": call_id, "content": output}
            history += [
                {"role": "assistant", "content": [use]},
                {"role": "user", "content": [result]},
            ]
        else:
            history += [
                {"type": "function_call", "call_id": call_id, "name": "shell", "arguments": "{}"},
                {"type": "function_call_output", "call_id": call_id, "output": output},
            ]
    said = {"role": "user", "content": task}
    schema = {"type": "object", "properties": {}}
    if wire == "chat":
        tools: Any = [{"type": "function", "function": {"name": "shell", "parameters": schema}}]
        return {"model": "m", "stream": stream, "messages": [said, *history], "tools": tools}
    if wire == "messages":
        tools = [{"name": "shell", "input_schema": schema}]
        asked = {"model": "m", "stream": stream, "max_tokens": 64, "tools": tools}
        return asked | {"messages": [said, *history]}
    tools = [{"type": "function", "name": "shell", "parameters": schema}]
    return {"model": "m", "stream": stream, "input": [said, *history], "tools": tools}
