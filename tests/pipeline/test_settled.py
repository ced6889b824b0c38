"""The tool results a lane may rewrite at a boundary: those of the kept turns but the newest."""

from __future__ import annotations

from skillstate.conversation import Message, Request, Text, ToolCall, ToolResult, Wire
from skillstate.pipeline.settled import settled_results


def conversation() -> Request:
    """A task, a Σ message, then three steps: a parallel batch of two, a single call, and a
    final one whose result comes in a user message (as Anthropic sends it)."""
    batch = Message("assistant", [ToolCall("a", "read", "{}"), ToolCall("b", "read", "{}")])
    messages = [
        Message("user", [Text("task")]),
        Message("user", [Text("Σ")]),
        batch,
        Message("tool", [ToolResult("a", [Text("A")])]),
        Message("tool", [ToolResult("b", [Text("B")])]),
        Message("assistant", [ToolCall("c", "grep", "{}")]),
        Message("tool", [ToolResult("c", [Text("C")])]),
        Message("assistant", [Text("now"), ToolCall("d", "make", "{}")]),
        Message("user", [Text("note"), ToolResult("d", [Text("D")])]),
    ]
    return Request(model="m", messages=messages, source=Wire.CHAT)


def test_the_results_of_the_kept_turns_but_the_newest_fresh_ones() -> None:
    request = conversation()
    kept = range(2, 9)
    assert list(settled_results(request, kept, 1)) == [(3, 0), (4, 0), (6, 0)]
    assert list(settled_results(request, kept, 2)) == [(3, 0), (4, 0)]
    assert list(settled_results(request, kept, 3)) == []
    assert list(settled_results(request, range(2, 7), 1)) == [(3, 0), (4, 0)]  # as it stood


def test_nothing_without_kept_turns_or_when_they_do_not_fit() -> None:
    request = conversation()
    assert list(settled_results(request, range(0), 1)) == []
    assert list(settled_results(request, range(2, 12), 1)) == []  # the client rewound
