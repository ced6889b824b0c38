"""The epoch's anchor: the documented digest of the history it was built on, which sees every
edit of content (opaque items of a tool result included) and no moved cache marker."""

from __future__ import annotations

import hashlib
from dataclasses import replace

from skillstate.conversation import Image, Message, Opaque, Text, ToolCall, ToolResult, Wire
from skillstate.state.epoch_record import Epoch, Span, anchor

REFERENCE = {"type": "tool_reference", "tool_name": "mcp__github__create_issue"}


def history(reference: dict[str, str] = REFERENCE) -> list[Message]:
    """A Claude Code tool search step: the call, then its result of one tool reference."""
    result = ToolResult(
        "toolu_1", [Text("Found:"), Image(url="https://x/y.png"), Opaque(Wire.MESSAGES, reference)]
    )
    return [
        Message("user", [Text("file an issue")]),
        Message("assistant", [ToolCall("toolu_1", "ToolSearch", '{"query":"github"}')]),
        Message("user", [result]),
    ]


def test_the_anchor_is_the_documented_digest() -> None:
    pieces = [
        b"user",
        b"file an issue",
        b"assistant",
        b"toolu_1",
        b"ToolSearch",
        b'{"query":"github"}',
        b"user",
        b"toolu_1",
        b"Found:",
        b'{"type":"tool_reference","tool_name":"mcp__github__create_issue"}',
    ]
    expected = hashlib.blake2b(b"".join(p + b"\0" for p in pieces), digest_size=16)
    assert anchor(history()) == expected.hexdigest()


def test_an_edited_opaque_item_of_a_result_breaks_the_epoch() -> None:
    epoch = Epoch(number=1, head=1, cut=3, anchor=anchor(history()), snapshot={})
    assert epoch.holds(history())
    assert not epoch.holds(history({**REFERENCE, "tool_name": "mcp__github__close_issue"}))


def test_a_moved_cache_marker_on_a_result_keeps_the_epoch() -> None:
    marked = history()
    result = marked[2].parts[0]
    assert isinstance(result, ToolResult)
    marked[2] = replace(marked[2], parts=[replace(result, cache={"type": "ephemeral"})])
    assert anchor(marked) == anchor(history())


def test_the_kept_turns_sit_after_the_head_and_the_sigma_message() -> None:
    span = Span("ar_1", 1, 4, 2)
    epoch = Epoch(1, head=1, cut=5, anchor="x", snapshot={}, spans=(span,), kept_until=9)
    assert epoch.kept() == range(2, 6)  # the client's messages 5 to 8, after head and Σ
    assert Epoch.from_json(epoch.to_json()) == epoch
    older = epoch.to_json()
    del older["kept_until"]  # a record written before the field: nothing kept
    assert Epoch.from_json(older).kept() == range(0)
    assert replace(epoch, spans=()).kept() == range(0)  # nothing collapsed: no Σ message
