"""An agent's loop as the engine gets it: a task, then one ``read_file`` call and its long
output a turn."""

from __future__ import annotations

from skillstate.conversation import Message, Request, Text, Tool, ToolCall, ToolResult, Wire

OUTPUT = "line of a long build log\n" * 150  # about 1,000 tokens a step


def read_loop(turns: int, output: str = OUTPUT) -> Request:
    """The request of the loop's ``turns``-th step, on the Chat wire."""
    messages = [Message("user", [Text("do the task")])]
    for n in range(turns):
        call = ToolCall(f"c{n}", "read_file", f'{{"path": "src/f{n}.py"}}')
        messages.append(Message("assistant", [call]))
        messages.append(Message("tool", [ToolResult(f"c{n}", [Text(output)])]))
    tools = [Tool("read_file", parameters={"type": "object"})]
    return Request(model="gpt-4.1", messages=messages, source=Wire.CHAT, tools=tools)
