"""Request bodies built from another wire's canonical request: valid for this wire, reshaped
as it requires, and refusing what it cannot carry."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic_messages_samples import assert_sdk_shape

from skillstate.conversation import (
    ArchiveRef,
    CacheMark,
    Image,
    Message,
    Opaque,
    Params,
    Part,
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
from skillstate.protocols.anthropic_messages import DEFAULT_MAX_TOKENS, encode_request

CACHE = {"type": "ephemeral"}
"""``CacheMark()`` as this wire writes it."""


def _request(*messages: Message, **fields: Any) -> Request:
    return Request("gpt-x", list(messages), Wire.CHAT, **fields)


def _encode(req: Request) -> dict[str, Any]:
    body = encode_request(req)
    assert_sdk_shape(body)
    return body


def test_an_agent_loop_from_chat_becomes_a_valid_messages_body() -> None:
    req = _request(
        Message("system", [Text("You are terse.")]),
        Message("developer", [Text("Use tools.", cache=CacheMark())]),
        Message("user", [Text("weather in Paris and Rome?")]),
        Message(
            "assistant",
            [
                Text(""),
                ToolCall("call_1", "get_weather", '{"city":"Paris"}'),
                ToolCall("call_2", "get_weather", '{"city": "Rome"}'),
            ],
        ),
        Message("tool", [ToolResult("call_1", [Text("sunny")])]),
        Message("tool", [ToolResult("call_2", [Text("rain")], is_error=True)]),
        Message("user", [Text("and tomorrow?")]),
        system=[Text("Gateway rules.", extra={"ignored": True})],
        tools=[Tool("get_weather", "Weather by city", {"type": "object", "properties": {}})],
        extra={"user": "u-1"},
    )
    assert _encode(req) == {
        "model": "gpt-x",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "system": [
            {"type": "text", "text": "Gateway rules."},
            {"type": "text", "text": "You are terse."},
            {"type": "text", "text": "Use tools.", "cache_control": CACHE},
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "weather in Paris and Rome?"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "call_2",
                        "name": "get_weather",
                        "input": {"city": "Rome"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_1",
                        "content": [{"type": "text", "text": "sunny"}],
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_2",
                        "content": [{"type": "text", "text": "rain"}],
                        "is_error": True,
                    },
                    {"type": "text", "text": "and tomorrow?"},
                ],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Weather by city",
                "input_schema": {"type": "object", "properties": {}},
            }
        ],
    }


def test_later_instructions_stay_in_place_as_system_messages() -> None:
    req = _request(
        Message("user", [Text("hi")]),
        Message("developer", [Text("Mode changed.")]),
        Message("assistant", [Text("ok")]),
    )
    assert _encode(req)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "system", "content": [{"type": "text", "text": "Mode changed."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    ]


def test_consecutive_assistant_messages_are_one_turn() -> None:
    req = _request(
        Message("user", [Text("go")]),
        Message("assistant", [Reasoning("plan", signature="sig-1")]),
        Message("assistant", [Text("done"), ToolCall("c", "f", "")]),
    )
    assert _encode(req)["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "plan", "signature": "sig-1"},
            {"type": "text", "text": "done"},
            {"type": "tool_use", "id": "c", "name": "f", "input": {}},
        ],
    }


@pytest.mark.parametrize(
    ("part", "block"),
    [
        (
            Reasoning("why", signature="sig"),
            {"type": "thinking", "thinking": "why", "signature": "sig"},
        ),
        (Reasoning("", signature="sig"), {"type": "thinking", "thinking": "", "signature": "sig"}),
        (
            Reasoning(signature="opaque", redacted=True),
            {"type": "redacted_thinking", "data": "opaque"},
        ),
        (Reasoning("a summary only"), None),
        (Reasoning("an empty signature", signature=""), None),
    ],
)
def test_reasoning_is_replayed_only_with_a_signature(
    part: Reasoning, block: dict[str, Any] | None
) -> None:
    req = _request(Message("user", [Text("q")]), Message("assistant", [part, Text("a")]))
    content = _encode(req)["messages"][1]["content"]
    assert content == ([block] if block else []) + [{"type": "text", "text": "a"}]


def test_a_message_left_empty_by_omissions_is_left_out() -> None:
    req = _request(
        Message("user", [Text("q")]),
        Message("assistant", [Reasoning("summary"), Text("")]),
        Message("user", [Text("again")]),
    )
    assert _encode(req)["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "q"}, {"type": "text", "text": "again"}],
        },
    ]


@pytest.mark.parametrize(
    ("image", "source"),
    [
        (
            Image(url="data:image/png;base64,iVBOR"),
            {"type": "base64", "media_type": "image/png", "data": "iVBOR"},
        ),
        (
            Image(data="R0lG", media_type="image/gif", detail="low"),
            {"type": "base64", "media_type": "image/gif", "data": "R0lG"},
        ),
        (
            Image(url="https://example.com/a.jpg", detail="high"),
            {"type": "url", "url": "https://example.com/a.jpg"},
        ),
    ],
)
def test_images(image: Image, source: dict[str, Any]) -> None:
    body = _encode(_request(Message("user", [image])))
    assert body["messages"][0]["content"] == [{"type": "image", "source": source}]


def test_images_in_tool_results_are_kept() -> None:
    result = ToolResult("c", [Text("shot:"), Image(url="data:image/webp;base64,UklG")])
    block = _encode(_request(Message("tool", [result])))["messages"][0]["content"][0]
    assert block["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/webp", "data": "UklG"},
    }


@pytest.mark.parametrize(
    ("message", "words"),
    [
        (
            Message("assistant", [Image(url="https://x/y.png")]),
            "Image part cannot be sent in a assistant",
        ),
        (Message("assistant", [ToolResult("c", [])]), "ToolResult part"),
        (Message("user", [ToolCall("c", "f", "{}")]), "ToolCall part"),
        (Message("user", [Reasoning("r", signature="s")]), "Reasoning part"),
        (
            Message("developer", [Image(url="https://x/y.png")]),
            "Image part cannot be sent in a developer",
        ),
        (
            Message("user", [Opaque(Wire.RESPONSES, {"type": "item_reference", "id": "r"})]),
            "openai-responses item_reference",
        ),
        (
            Message("tool", [ToolResult("c", [Opaque(Wire.RESPONSES, {"type": "input_file"})])]),
            "openai-responses input_file item cannot be sent",
        ),
        (Message("user", [ArchiveRef("sha256:ab")]), "ArchiveRef part"),
        (Message("user", [Image(url="data:image/png,rawbytes")]), "must be base64"),
        (Message("user", [Image(data="abc")]), "needs a media type"),
        (Message("user", [Image()]), "needs a URL or inline data"),
        (Message("assistant", [ToolCall("c", "f", "{not json")]), "not a JSON object"),
    ],
)
def test_what_this_wire_cannot_carry_is_refused(message: Message, words: str) -> None:
    with pytest.raises(ProtocolError, match=words) as caught:
        encode_request(_request(message))
    assert caught.value.status == 400


def test_an_opaque_block_of_this_wire_passes_through() -> None:
    document = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "d"},
    }
    parts: list[Part] = [Opaque(Wire.MESSAGES, document)]
    assert encode_request(_request(Message("user", parts)))["messages"][0]["content"] == [document]


def test_an_opaque_item_of_this_wire_in_a_tool_result_passes_through() -> None:
    reference = {"type": "tool_reference", "tool_name": "mcp__docs__search"}
    result = ToolResult("c", [Text("found"), Opaque(Wire.MESSAGES, reference)])
    body = encode_request(_request(Message("tool", [result])))
    assert body["messages"][0]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "c",
            "content": [{"type": "text", "text": "found"}, reference],
        }
    ]


def test_custom_tools_take_their_raw_input_as_a_string_field() -> None:
    req = _request(
        Message("user", [Text("patch it")]),
        Message("assistant", [ToolCall("c", "apply_patch", "*** Begin Patch", kind="custom")]),
        Message("tool", [ToolResult("c", [Text("applied")], kind="custom")]),
        tools=[Tool("apply_patch", "Apply a patch", kind="custom")],
    )
    body = _encode(req)
    assert body["tools"] == [
        {
            "name": "apply_patch",
            "description": "Apply a patch",
            "input_schema": {
                "type": "object",
                "properties": {"input": {"type": "string"}},
                "required": ["input"],
            },
        }
    ]
    assert body["messages"][1]["content"][0]["input"] == {"input": "*** Begin Patch"}


def test_tools_without_a_schema_get_the_empty_object_schema() -> None:
    body = _encode(_request(tools=[Tool("ping", cache=CacheMark())]))
    assert body["tools"] == [
        {
            "name": "ping",
            "input_schema": {"type": "object", "properties": {}},
            "cache_control": CACHE,
        }
    ]


def test_a_hosted_tool_of_another_wire_is_refused() -> None:
    with pytest.raises(ProtocolError, match="'web_search_preview'"):
        encode_request(_request(tools=[Tool("search", kind="web_search_preview")]))


def test_parameters() -> None:
    params = Params(
        max_tokens=100,
        temperature=0.3,
        top_p=0.9,
        stop=["END"],
        stream=True,
        tool_choice=ToolChoice("required"),
        parallel_tool_calls=False,
        effort="medium",
        thinking_budget=2048,
    )
    body = _encode(_request(tools=[Tool("f")], params=params))
    assert {k: v for k, v in body.items() if k not in ("model", "messages", "tools")} == {
        "max_tokens": 100,
        "temperature": 0.3,
        "top_p": 0.9,
        "stop_sequences": ["END"],
        "stream": True,
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "output_config": {"effort": "medium"},
    }


def test_max_tokens_defaults_with_room_for_the_thinking_budget() -> None:
    assert _encode(_request())["max_tokens"] == DEFAULT_MAX_TOKENS
    budget = _request(params=Params(thinking_budget=10000))
    assert _encode(budget)["max_tokens"] == DEFAULT_MAX_TOKENS + 10000


@pytest.mark.parametrize(
    ("effort", "sent"), [("low", True), ("high", True), ("minimal", False), ("xhigh", False)]
)
def test_only_portable_effort_levels_are_sent(effort: str, sent: bool) -> None:
    body = _encode(_request(params=Params(effort=effort)))
    assert body.get("output_config") == ({"effort": effort} if sent else None)


@pytest.mark.parametrize(
    ("choice", "parallel", "tools", "sent"),
    [
        (ToolChoice("auto"), None, True, {"type": "auto"}),
        (ToolChoice("none"), None, True, {"type": "none"}),
        (ToolChoice("tool", "f"), True, True, {"type": "tool", "name": "f"}),
        (None, False, True, {"type": "auto", "disable_parallel_tool_use": True}),
        (None, True, True, None),
        (ToolChoice("required"), False, False, None),
    ],
)
def test_tool_choice_is_sent_only_with_tools(
    choice: ToolChoice | None, parallel: bool | None, tools: bool, sent: dict[str, Any] | None
) -> None:
    req = _request(
        tools=[Tool("f")] if tools else [],
        params=Params(tool_choice=choice, parallel_tool_calls=parallel),
    )
    assert _encode(req).get("tool_choice") == sent


def test_a_tool_choice_naming_no_tool_is_refused() -> None:
    req = _request(tools=[Tool("f")], params=Params(tool_choice=ToolChoice("tool")))
    with pytest.raises(ProtocolError, match="needs a tool name"):
        encode_request(req)
