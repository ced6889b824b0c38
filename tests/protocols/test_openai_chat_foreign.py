"""Chat request bodies built from requests of the other wires (canonical fields only)."""

from __future__ import annotations

import pytest

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
from skillstate.protocols.openai_chat import decode_request, encode_request

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
#: A block of a Claude Code tool search result.
REFERENCE = {"type": "tool_reference", "tool_name": "mcp__docs__search"}


def foreign(messages: list[Message], **fields: object) -> Request:
    return Request(model="m", messages=messages, source=Wire.MESSAGES, **fields)  # type: ignore[arg-type]


def test_an_agent_turn_from_messages() -> None:
    """A Claude-Code-like history: system blocks, thinking, parallel calls, results in a user
    message next to new text."""
    req = foreign(
        [
            Message("user", [Text("fix the bug", cache={"type": "ephemeral"})]),
            Message(
                "assistant",
                [
                    Reasoning("let me read", signature="sig-from-anthropic"),
                    Text("Reading both files."),
                    ToolCall("toolu_1", "read", '{"path":"a.py"}'),
                    ToolCall("toolu_2", "read", '{"path":"b.py"}'),
                ],
                extra={"x_wire_only": True},
            ),
            Message(
                "user",
                [
                    ToolResult("toolu_1", [Text("print(1)")]),
                    ToolResult("toolu_2", [Text("No such file")], is_error=True),
                    Text("also check c.py"),
                ],
            ),
        ],
        system=[Text("You are a coding agent."), Text("Be brief.", cache={"type": "ephemeral"})],
        extra={"metadata": {"user_id": "u"}},
        hints={"anything": 1},
    )
    body = encode_request(req)
    assert body["messages"] == [
        {"role": "system", "content": "You are a coding agent.\n\nBe brief."},
        {"role": "user", "content": "fix the bug"},
        {
            "role": "assistant",
            "content": "Reading both files.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"a.py"}'},
                },
                {
                    "id": "toolu_2",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"b.py"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "print(1)"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "No such file"},
        {"role": "user", "content": "also check c.py"},
    ]
    assert set(body) == {"model", "messages"}
    decode_request(body)  # a valid body of this wire


def test_consecutive_assistant_items_become_one_turn() -> None:
    """The Responses wire sends reasoning, message and each function call as separate items."""
    req = foreign(
        [
            Message("user", [Text("go")]),
            Message("assistant", [Reasoning("", signature="enc")]),
            Message("assistant", [Text("Running it.")]),
            Message("assistant", [ToolCall("call_1", "shell", '{"cmd":"ls"}')]),
            Message("tool", [ToolResult("call_1", [Text("a\n"), Text("b\n")])]),
            Message("tool", [ToolResult("call_2", [])]),
        ]
    )
    messages = encode_request(req)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert messages[1]["content"] == "Running it."
    assert len(messages[1]["tool_calls"]) == 1
    assert messages[2]["content"] == [
        {"type": "text", "text": "a\n"},
        {"type": "text", "text": "b\n"},
    ]
    assert messages[3]["content"] == ""


def test_assistant_content_shapes() -> None:
    req = foreign(
        [
            Message("assistant", [ToolCall("c", "f", "{}")]),
            Message("user", [Text("x")]),
            Message("assistant", [Reasoning("only thoughts")]),
            Message("user", [Text("y")]),
            Message("assistant", [Text("one"), Text("two")]),
        ]
    )
    first, _, second, _, third = encode_request(req)["messages"]
    assert first["content"] is None
    assert second == {"role": "assistant", "content": ""}
    assert third["content"] == [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]


def test_user_images_and_developer_messages() -> None:
    req = foreign(
        [
            Message("developer", [Text("rules")]),
            Message(
                "user",
                [
                    Text("look"),
                    Image(data="QUJD", media_type="image/png", detail="low"),
                    Image(url="https://x.test/a.png"),
                ],
            ),
        ]
    )
    developer, user = encode_request(req)["messages"]
    assert developer == {"role": "developer", "content": "rules"}
    assert user["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD", "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
    ]


def test_tools_and_params() -> None:
    req = foreign(
        [Message("user", [Text("hi")])],
        tools=[
            Tool("read", "Read a file", SCHEMA, extra={"cache_control": {"type": "ephemeral"}}),
            Tool("apply_patch", "Edit files", kind="custom"),
            Tool("bare"),
        ],
        params=Params(
            max_tokens=32000,
            temperature=0.5,
            top_p=0.9,
            stop=["END"],
            stream=True,
            tool_choice=ToolChoice("tool", "apply_patch"),
            parallel_tool_calls=False,
            thinking_budget=10000,
        ),
    )
    body = encode_request(req)
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "read", "description": "Read a file", "parameters": SCHEMA},
        },
        {"type": "custom", "custom": {"name": "apply_patch", "description": "Edit files"}},
        {"type": "function", "function": {"name": "bare"}},
    ]
    assert body["tool_choice"] == {"type": "custom", "custom": {"name": "apply_patch"}}
    assert body["max_completion_tokens"] == 32000 and "max_tokens" not in body
    assert (body["temperature"], body["top_p"], body["stop"]) == (0.5, 0.9, ["END"])
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["parallel_tool_calls"] is False
    assert body["reasoning_effort"] == "medium"


@pytest.mark.parametrize(
    ("params", "effort"),
    [
        (Params(thinking_budget=1024), "low"),
        (Params(thinking_budget=20000), "high"),
        (Params(thinking_budget=20000, effort="minimal"), "minimal"),
        (Params(thinking_budget=0), None),
    ],
)
def test_effort_from_a_thinking_budget(params: Params, effort: str | None) -> None:
    body = encode_request(foreign([], params=params))
    assert body.get("reasoning_effort") == effort


def test_named_function_choice_and_no_stream() -> None:
    req = foreign(
        [],
        tools=[Tool("read", parameters=SCHEMA)],
        params=Params(tool_choice=ToolChoice("tool", "read"), stream=False),
    )
    body = encode_request(req)
    assert body["tool_choice"] == {"type": "function", "function": {"name": "read"}}
    assert "stream" not in body and "stream_options" not in body


def test_custom_calls_keep_their_raw_input() -> None:
    req = Request(
        model="m",
        source=Wire.RESPONSES,
        messages=[
            Message("assistant", [ToolCall("call_1", "apply_patch", "*** Begin", kind="custom")]),
            Message("tool", [ToolResult("call_1", [Text("ok")], kind="custom")]),
        ],
    )
    assistant, tool = encode_request(req)["messages"]
    assert assistant["tool_calls"] == [
        {"id": "call_1", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin"}}
    ]
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": "ok"}


@pytest.mark.parametrize(
    ("message", "param"),
    [
        (Message("user", [Opaque(Wire.MESSAGES, {"type": "document"})]), "messages[1]"),
        (
            Message("assistant", [Opaque(Wire.RESPONSES, {"type": "web_search_call"})]),
            "messages[1]",
        ),
        (Message("user", [ToolResult("c", [Image()])]), "messages[1]"),
        (Message("tool", [ToolResult("c", [Opaque(Wire.MESSAGES, REFERENCE)])]), "messages[1]"),
        (Message("assistant", [Image(url="https://x.test/s.png")]), "messages[1]"),
        (Message("system", [Image(url="https://x.test/s.png")]), "messages[1]"),
        (Message("user", [ArchiveRef("sha256:ab", "old turns")]), "messages[1]"),
        (Message("tool", [Text("stray")]), "messages[1]"),
        (Message("user", [Image()]), "messages[1]"),
    ],
)
def test_what_this_wire_cannot_carry(message: Message, param: str) -> None:
    req = foreign([Message("user", [Text("first")]), message])
    with pytest.raises(ProtocolError) as caught:
        encode_request(req)
    assert caught.value.status == 400
    assert caught.value.param == param


def test_images_of_tool_results_follow_in_a_user_message() -> None:
    """A ``tool`` message holds text only: a result's text stays in it, its images come in the
    user message after the batch's results, each result's images behind a text naming it."""
    png = Image(data="iVBORw0KGgo=", media_type="image/png", cache={"type": "ephemeral"})
    results = Message(
        "user",
        [
            ToolResult("toolu_1", [Text("a 2x2 picture"), png]),
            ToolResult("toolu_2", [Text("print(1)")]),
            ToolResult("toolu_3", [Image(url="https://x.test/s.png")]),
            Text("what is in them?"),
        ],
    )
    body = encode_request(foreign([Message("user", [Text("look")]), results]))
    assert body["messages"][1:] == [
        {"role": "tool", "tool_call_id": "toolu_1", "content": "a 2x2 picture"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "print(1)"},
        {"role": "tool", "tool_call_id": "toolu_3", "content": ""},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "image from tool result toolu_1"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "text", "text": "image from tool result toolu_3"},
                {"type": "image_url", "image_url": {"url": "https://x.test/s.png"}},
            ],
        },
        {"role": "user", "content": "what is in them?"},
    ]


def test_images_of_a_batch_of_tool_messages_come_after_all_of_them() -> None:
    """Tool messages one per result (as the Responses wire has them) stay together: the
    images of the batch follow its last result, before the next message."""
    shot = Image(data="R0lG", media_type="image/gif")
    req = foreign(
        [
            Message("user", [Text("look")]),
            Message("assistant", [ToolCall("c1", "shot", "{}"), ToolCall("c2", "shot", "{}")]),
            Message("tool", [ToolResult("c1", [shot])]),
            Message("tool", [ToolResult("c2", [Text("none")])]),
            Message("user", [Text("and?")]),
        ]
    )
    roles = [(m["role"], m.get("tool_call_id")) for m in encode_request(req)["messages"]]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("tool", "c1"),
        ("tool", "c2"),
        ("user", None),
        ("user", None),
    ]
    note = encode_request(req)["messages"][4]["content"]
    assert note[0] == {"type": "text", "text": "image from tool result c1"}
    assert note[1]["image_url"]["url"] == "data:image/gif;base64,R0lG"


def test_images_in_a_tool_message_of_this_wire_stay_in_it() -> None:
    """This wire's own request is sent as it came, whatever its tool message holds."""
    tool = {
        "role": "tool",
        "tool_call_id": "c",
        "content": [{"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}],
    }
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}, tool]}
    assert encode_request(decode_request(body)) == body


def test_an_opaque_item_of_another_wire_in_a_tool_result_is_named() -> None:
    """A Claude Code tool search result has no Chat form: refused, naming the block."""
    result = ToolResult("c", [Text("found"), Opaque(Wire.MESSAGES, REFERENCE)])
    with pytest.raises(ProtocolError) as caught:
        encode_request(foreign([Message("user", [Text("first")]), Message("user", [result])]))
    assert caught.value.status == 400 and caught.value.param == "messages[1]"
    assert caught.value.message == (
        "a tool_reference item of the anthropic-messages wire cannot be sent on the Chat wire"
    )


def test_hosted_tools_of_another_wire_are_refused() -> None:
    req = foreign([], tools=[Tool("read"), Tool("web_search", kind="web_search_20250305")])
    with pytest.raises(ProtocolError) as caught:
        encode_request(req)
    assert caught.value.param == "tools[1]"
    assert "web_search_20250305" in caught.value.message


def test_chat_opaque_items_pass_in_any_request() -> None:
    """An item this wire itself produced (kept by a lane) is sent as it came."""
    part = {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}
    req = foreign([Message("user", [Opaque(Wire.CHAT, part)])])
    assert encode_request(req)["messages"] == [{"role": "user", "content": [part]}]


def test_errors_name_the_canonical_message() -> None:
    req = foreign(
        [
            Message("assistant", [Text("a")]),
            Message("assistant", [Text("b")]),
            Message("user", [Opaque(Wire.MESSAGES, {"type": "document"})]),
        ]
    )
    with pytest.raises(ProtocolError) as caught:
        encode_request(req)
    assert caught.value.param == "messages[2]"


def test_a_custom_call_another_wire_sent_as_a_function_call() -> None:
    """Its JSON ``{"input": ...}`` is unwrapped; arguments of another form are kept whole."""
    req = foreign(
        [
            Message(
                "assistant",
                [
                    ToolCall("t1", "apply_patch", '{"input": "*** Begin"}'),
                    ToolCall("t2", "apply_patch", "not json"),
                    ToolCall("t3", "apply_patch", '{"patch": "x"}'),
                ],
            )
        ],
        tools=[Tool("apply_patch", kind="custom")],
    )
    calls = encode_request(req)["messages"][0]["tool_calls"]
    assert [c["custom"]["input"] for c in calls] == ["*** Begin", "not json", '{"patch": "x"}']
    assert {c["type"] for c in calls} == {"custom"}
