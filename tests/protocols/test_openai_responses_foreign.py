"""Requests of another wire encoded for the Responses wire: built from the canonical fields
only, valid for the openai SDK's input types, and refusing what the wire cannot carry."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.responses import Tool as SdkTool
from openai.types.responses.response_input_item import ResponseInputItem
from pydantic import TypeAdapter

from skillstate.conversation import (
    ArchiveRef,
    Image,
    Message,
    Opaque,
    Params,
    ProtocolError,
    Reasoning,
    Request,
    Text,
    Tool,
    ToolCall,
    ToolChoice,
    ToolResult,
    Wire,
)
from skillstate.protocols.openai_responses import decode_request, encode_request

ITEM = TypeAdapter(ResponseInputItem)
TOOL = TypeAdapter(SdkTool)
SCHEMA = {"type": "object", "properties": {"cmd": {"type": "string"}}}


def anthropic_like() -> Request:
    """What the Anthropic adapter makes of a Claude Code turn: system blocks, a thinking
    block with its signature, text, tool_use, then tool_result blocks in the next user turn."""
    return Request(
        model="claude-sonnet",
        source=Wire.MESSAGES,
        system=[Text("You are Claude Code.", cache={"type": "ephemeral"}), Text("Be brief.")],
        messages=[
            Message(
                "user",
                [
                    Text("look", hints={"type": "refusal"}),
                    Image(data="AAAA", media_type="image/png"),
                ],
            ),
            Message(
                "assistant",
                [
                    Reasoning("thinking hard", signature="sig-1"),
                    Reasoning(""),
                    Text("Running it.", extra={"citations": None}),
                    ToolCall("toolu_1", "bash", '{"cmd":"ls"}', extra={"caller": 1}),
                    ToolCall("toolu_2", "apply_patch", '{"input":"*** Begin Patch\\n"}'),
                ],
            ),
            Message(
                "user",
                [
                    ToolResult("toolu_1", [Text("a.py")], is_error=True),
                    ToolResult("toolu_2", [Text("ok"), Image(url="https://x/y.png")]),
                    Text("and now?"),
                ],
            ),
        ],
        tools=[
            Tool("bash", "Run a command.", SCHEMA, extra={"cache_control": {}}),
            Tool("apply_patch", "Edit files.", kind="custom"),
        ],
        params=Params(
            max_tokens=1024,
            temperature=0.5,
            stream=True,
            thinking_budget=8000,
            tool_choice=ToolChoice("tool", "apply_patch"),
        ),
        extra={"metadata": {"user_id": "u"}},
        hints={"keys": ["instructions"]},
    )


def test_a_foreign_request_becomes_a_valid_responses_body() -> None:
    body = encode_request(anthropic_like())
    assert body["model"] == "claude-sonnet"
    assert body["instructions"] == "You are Claude Code.\n\nBe brief."
    assert "metadata" not in body, "another wire's extra is ignored"
    for item in body["input"]:
        ITEM.validate_python(item)
    for tool in body["tools"]:
        TOOL.validate_python(tool)
    assert body["max_output_tokens"] == 1024 and body["temperature"] == 0.5
    assert body["stream"] is True
    assert body["reasoning"] == {"effort": "medium"}
    assert body["tool_choice"] == {"type": "custom", "name": "apply_patch"}


def test_a_foreign_turn_keeps_its_order_and_maps_each_part() -> None:
    items = encode_request(anthropic_like())["input"]
    kinds = [item["type"] for item in items]
    assert kinds == [
        "message",
        "reasoning",
        "message",
        "function_call",
        "custom_tool_call",
        "function_call_output",
        "custom_tool_call_output",
        "message",
    ]
    user, reasoning, text, call, patch, result, patch_result, follow = items
    assert user["content"] == [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
    ]
    assert reasoning["summary"] == [{"type": "summary_text", "text": "thinking hard"}]
    assert reasoning["encrypted_content"] == "sig-1" and reasoning["id"].startswith("rs_")
    assert text["role"] == "assistant" and text["content"][0]["text"] == "Running it."
    assert "citations" not in text["content"][0]
    assert call == {
        "type": "function_call",
        "call_id": "toolu_1",
        "name": "bash",
        "arguments": '{"cmd":"ls"}',
    }
    assert patch == {
        "type": "custom_tool_call",
        "call_id": "toolu_2",
        "name": "apply_patch",
        "input": "*** Begin Patch\n",
    }
    assert result == {"type": "function_call_output", "call_id": "toolu_1", "output": "a.py"}
    assert patch_result["output"] == [
        {"type": "input_text", "text": "ok"},
        {"type": "input_image", "image_url": "https://x/y.png", "detail": "auto"},
    ]
    assert follow == {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "and now?"}],
    }


def test_generated_ids_are_stable_across_requests() -> None:
    first = encode_request(anthropic_like())["input"]
    second = encode_request(anthropic_like())["input"]
    assert first == second


def test_foreign_tools() -> None:
    tools = encode_request(anthropic_like())["tools"]
    assert tools == [
        {
            "type": "function",
            "name": "bash",
            "description": "Run a command.",
            "parameters": SCHEMA,
            "strict": False,
        },
        {"type": "custom", "name": "apply_patch", "description": "Edit files."},
    ]
    bare = Request("m", [], Wire.CHAT, tools=[Tool("noop")])
    assert encode_request(bare)["tools"][0]["parameters"] == {"type": "object", "properties": {}}


def test_chat_tool_messages_become_outputs() -> None:
    req = Request(
        "gpt",
        [
            Message("developer", [Text("rules")]),
            Message("user", [Text("hi")]),
            Message("assistant", [ToolCall("c1", "f", "{}"), ToolCall("c2", "f", "{}")]),
            Message("tool", [ToolResult("c1", [Text("one")])]),
            Message("tool", [ToolResult("c2", [])]),
        ],
        Wire.CHAT,
    )
    items = encode_request(req)["input"]
    assert items[0] == {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": "rules"}],
    }
    assert [i["type"] for i in items[2:]] == [
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert items[-1]["output"] == ""
    assert "instructions" not in encode_request(req)


def test_the_effort_wins_over_a_thinking_budget() -> None:
    def effort(params: Params) -> Any:
        return encode_request(Request("m", [], Wire.MESSAGES, params=params)).get("reasoning")

    assert effort(Params(thinking_budget=1024)) == {"effort": "low"}
    assert effort(Params(thinking_budget=50_000)) == {"effort": "high"}
    assert effort(Params(thinking_budget=1024, effort="medium")) == {"effort": "medium"}
    assert effort(Params()) is None


@pytest.mark.parametrize(
    ("message", "words"),
    [
        (Message("user", [Opaque(Wire.MESSAGES, {"type": "document"})]), "anthropic-messages"),
        (
            Message("tool", [ToolResult("c", [Opaque(Wire.MESSAGES, {"type": "tool_reference"})])]),
            "A tool_reference item of the anthropic-messages wire",
        ),
        (
            Message("user", [ToolResult("c", [Text("a"), Opaque(Wire.CHAT, {"type": "file"})])]),
            "A file item of the openai-chat wire",
        ),
        (Message("assistant", [Image(url="https://x")]), "images"),
        (Message("tool", [Text("loose")]), "tool results"),
        (Message("user", [ArchiveRef("sha256:1")]), "ArchiveRef"),
        (Message("assistant", [ToolResult("c", [])]), "ToolResult"),
    ],
)
def test_what_the_wire_cannot_carry_is_refused(message: Message, words: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        encode_request(Request("m", [message], Wire.MESSAGES))
    assert words in caught.value.message and caught.value.status == 400


def test_stop_sequences_and_foreign_hosted_tools_are_refused() -> None:
    with pytest.raises(ProtocolError, match="stop"):
        encode_request(Request("m", [], Wire.CHAT, params=Params(stop=["\n"])))
    with pytest.raises(ProtocolError, match="web_search"):
        encode_request(Request("m", [], Wire.CHAT, tools=[Tool("w", kind="web_search")]))


def test_an_opaque_item_belongs_to_its_wire_not_to_the_request_source() -> None:
    item = {"type": "web_search_call", "id": "w", "status": "completed"}
    req = decode_request({"model": "m", "input": [item]})
    req.source = Wire.CHAT
    assert encode_request(req)["input"] == [item]


def test_foreign_reasoning_in_a_request_needs_its_opaque_token() -> None:
    from skillstate.conversation import Message, Reasoning, Request, Text, Wire
    from skillstate.protocols import adapter

    def items(reasoning: Reasoning) -> list[dict[str, object]]:
        turn = Message("assistant", [reasoning, Text("answer")])
        request = Request("m", [Message("user", [Text("q")]), turn], Wire.MESSAGES)
        body = adapter(Wire.RESPONSES).encode_request(request)
        return [i for i in body["input"] if i.get("type") == "reasoning"]

    assert items(Reasoning(text="I think...")) == []  # no id the API issued: left out
    kept = items(Reasoning(text="I think...", signature="opaque-token"))
    assert [i["encrypted_content"] for i in kept] == ["opaque-token"]
