"""The reading copy of a span: every piece of content whole, wire details left out."""

from __future__ import annotations

from skillstate.archive import span_text
from skillstate.conversation import (
    ArchiveRef,
    Image,
    Message,
    Opaque,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Wire,
)


def test_an_opaque_item_of_a_tool_result_reads_as_its_json() -> None:
    reference = Opaque(Wire.MESSAGES, {"type": "tool_reference", "tool_name": "WebFetch"})
    span = [Message("user", [ToolResult("toolu_1", [reference])])]
    assert span_text(span).split("\n") == [
        "## 1 user",
        "[tool result id=toolu_1]",
        "[anthropic-messages item]",
        '{"type":"tool_reference","tool_name":"WebFetch"}',
    ]


def test_each_part_kind_reads_as_text() -> None:
    span = [
        Message("user", [Text("look", cache={"type": "ephemeral"}), Image(url="https://x/y.png")]),
        Message(
            "assistant",
            [
                Reasoning("thinking aloud"),
                Reasoning(signature="opaque", redacted=True),
                ToolCall("c1", "read", '{"path": "a.py"}'),
                Opaque(Wire.RESPONSES, {"type": "web_search_call", "id": "ws_1"}),
            ],
        ),
        Message(
            "tool",
            [
                ToolResult(
                    "c1", [Text("line one"), Image(data="QUJD", media_type="image/png")], True
                )
            ],
        ),
        Message("system", [ArchiveRef("ar_" + "0" * 24, "older turns")]),
    ]
    assert span_text(span, first_turn=7).split("\n") == [
        "## 7 user",
        "look",
        "[image https://x/y.png]",
        "",
        "## 8 assistant",
        "[reasoning]",
        "thinking aloud",
        "[reasoning, redacted]",
        "[tool call read id=c1]",
        '{"path": "a.py"}',
        "[openai-responses item]",
        '{"type":"web_search_call","id":"ws_1"}',
        "",
        "## 9 tool",
        "[tool result id=c1 error]",
        "line one",
        "[image image/png, 4 base64 characters]",
        "",
        "## 10 system",
        f"[archived ar_{'0' * 24}] older turns",
    ]


def test_inline_image_urls_are_not_spelled_out() -> None:
    url = "data:image/png;base64," + "A" * 5000
    text = span_text([Message("user", [Image(url=url)])])
    assert text == f"## 1 user\n[image data:image/png;base64,..., {len(url)} characters]"
