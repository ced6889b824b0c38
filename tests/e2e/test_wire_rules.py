"""``wire_problems`` finds the orphan results and unanswered calls each wire refuses, and
passes well-paired requests. These run without the CLIs installed."""

from __future__ import annotations

from typing import Any

import pytest
from wire_rules import wire_problems

from skillstate.conversation import Wire


def call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}


def output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "x"}


def use(call_id: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "f"}]}


def result(*ids: str) -> dict[str, Any]:
    blocks = [{"type": "tool_result", "tool_use_id": i, "content": "x"} for i in ids]
    return {"role": "user", "content": blocks}


def calls(*ids: str) -> dict[str, Any]:
    listed = [{"id": i, "type": "function", "function": {"name": "f"}} for i in ids]
    return {"role": "assistant", "tool_calls": listed}


def tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "x"}


def marked(blocks: int) -> Any:
    """A user message whose ``blocks`` text blocks each carry a cache breakpoint."""
    marker = {"type": "ephemeral"}
    content = [{"type": "text", "text": "x", "cache_control": marker} for _ in range(blocks)]
    return {"role": "user", "content": content}


USER = {"role": "user", "content": "go"}


@pytest.mark.parametrize(
    ("wire", "body"),
    [
        (Wire.RESPONSES, {"input": [USER, call("a"), call("b"), output("b"), output("a")]}),
        (Wire.MESSAGES, {"messages": [USER, use("a"), result("a"), USER]}),
        (Wire.MESSAGES, {"system": marked(1)["content"], "messages": [marked(3)]}),
        (Wire.CHAT, {"messages": [USER, calls("a", "b"), tool("b"), tool("a"), USER]}),
    ],
)
def test_paired_requests_pass(wire: Wire, body: dict[str, Any]) -> None:
    assert wire_problems(wire, body) == []


@pytest.mark.parametrize(
    ("wire", "body", "problem"),
    [
        (Wire.RESPONSES, {"input": [USER, output("a")]}, "no call before it"),
        (Wire.RESPONSES, {"input": [USER, call("a")]}, "answered 0 times"),
        (Wire.RESPONSES, {"input": [call("a"), output("a"), output("a")]}, "answered 2 times"),
        (Wire.MESSAGES, {"messages": [USER, result("a")]}, "after no tool_use"),
        (Wire.MESSAGES, {"messages": [use("a"), result("b")]}, "results ['b'] for calls ['a']"),
        (Wire.MESSAGES, {"messages": [USER, use("a")]}, "nothing answers"),
        (Wire.CHAT, {"messages": [USER, tool("a")]}, "answers no call"),
        (Wire.CHAT, {"messages": [calls("a", "b"), tool("a"), USER]}, "answered by ['a']"),
        (Wire.CHAT, {"messages": [USER, calls("a")]}, "the last calls"),
        (
            Wire.MESSAGES,
            {"system": marked(2)["content"], "messages": [marked(3)]},
            "5 cache_control",
        ),
    ],
)
def test_broken_rules_are_named(wire: Wire, body: dict[str, Any], problem: str) -> None:
    problems = wire_problems(wire, body)
    assert len(problems) == 1 and problem in problems[0], problems
