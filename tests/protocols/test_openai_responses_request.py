"""Responses requests: the identity law on generated and recorded bodies, what decoding yields
(the grouping contract, params, tools), and validation errors naming the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_responses_shapes import (
    ITEM_SHAPES,
    PART_SHAPES,
    fixture,
    request_body,
    request_fixtures,
)

from skillstate.conversation import (
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
from skillstate.protocols import adapter
from skillstate.protocols.openai_responses import decode_request, encode_request
from skillstate.support.jsonio import dumps, loads


@settings(max_examples=200, deadline=None)
@given(request_body)
def test_identity_on_generated_bodies(body: dict[str, Any]) -> None:
    original = copy.deepcopy(body)
    assert encode_request(decode_request(body)) == original
    assert body == original, "decoding must not change the client's body"


@pytest.mark.parametrize("shape", sorted(ITEM_SHAPES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_identity_on_every_item_shape(shape: str, data: st.DataObject) -> None:
    items = data.draw(st.lists(ITEM_SHAPES[shape], min_size=1, max_size=3))
    body = {"model": "m", "input": items}
    assert encode_request(decode_request(copy.deepcopy(body))) == body


@pytest.mark.parametrize("shape", sorted(PART_SHAPES))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_identity_on_every_content_part_shape(shape: str, data: st.DataObject) -> None:
    parts = data.draw(st.lists(PART_SHAPES[shape], min_size=1, max_size=3))
    role = data.draw(st.sampled_from(["user", "developer", "assistant"]))
    body = {"model": "m", "input": [{"type": "message", "role": role, "content": parts}]}
    assert encode_request(decode_request(copy.deepcopy(body))) == body


@pytest.mark.parametrize(("name", "body"), request_fixtures(), ids=lambda v: str(v)[:40])
def test_identity_on_recorded_and_realistic_bodies(name: str, body: dict[str, Any]) -> None:
    assert loads(dumps(encode_request(decode_request(body)))) == body


def test_the_adapter_is_registered_for_its_wire_and_path() -> None:
    responses = adapter(Wire.RESPONSES)
    assert responses.path == "/v1/responses"
    assert responses.decode_request is decode_request


def test_codex_items_group_into_turns_in_item_order() -> None:
    req = decode_request(fixture("codex_turn.json"))
    roles = [m.role for m in req.messages]
    assert roles == [
        "developer",
        "user",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "assistant",
        "user",
        "assistant",
        "user",
        "user",
        "user",
    ]
    turn = req.messages[3]
    assert [type(p) for p in turn.parts] == [Reasoning, ToolCall, ToolCall]
    reasoning, call, namespaced = turn.parts
    assert isinstance(reasoning, Reasoning) and isinstance(call, ToolCall)
    assert reasoning.signature == "gAAAAABpXv1aEncryptedReasoningBlob=="
    assert (
        reasoning.text.startswith("**Inspecting the repo**")
        and "\n\n**Planning**" in reasoning.text
    )
    assert (call.id, call.name, call.kind) == ("call_Q1", "exec_command", "function")
    assert call.extra == {"id": "fc_0a1c", "status": "completed"}
    assert isinstance(namespaced, ToolCall) and namespaced.extra == {"namespace": "mcp__files"}


def test_tool_outputs_are_tool_messages_with_one_result() -> None:
    req = decode_request(fixture("codex_turn.json"))
    first, second = req.messages[4].parts[0], req.messages[5].parts[0]
    assert isinstance(first, ToolResult) and isinstance(second, ToolResult)
    assert first.call_id == "call_Q1" and first.content[0].text.startswith("Chunk ID")  # type: ignore[union-attr]
    assert second.hints == {"list": True} and isinstance(second.content[0], Text)
    patch_turn, patch_result = req.messages[6], req.messages[7].parts[0]
    assert isinstance(patch_turn.parts[1], ToolCall) and patch_turn.parts[1].kind == "custom"
    assert patch_turn.parts[1].arguments.startswith("*** Begin Patch")
    assert isinstance(patch_result, ToolResult) and patch_result.kind == "custom"


def test_unmodelled_items_are_opaque_messages_kept_exactly() -> None:
    body = fixture("codex_turn.json")
    req = decode_request(body)
    opaque = {
        part.data["type"]: m.role
        for m in req.messages
        for part in m.parts
        if isinstance(part, Opaque)
    }
    assert all(len(m.parts) == 1 for m in req.messages if isinstance(m.parts[0], Opaque))
    assert opaque == {
        "web_search_call": "assistant",
        "local_shell_call": "assistant",
        "local_shell_call_output": "user",
        "item_reference": "user",
        "compaction": "user",
    }


def test_assistant_message_parts_remember_their_item() -> None:
    body = {
        "model": "m",
        "input": [
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_1",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": "a"},
                    {"type": "refusal", "refusal": "no"},
                ],
            },
            {"type": "message", "role": "assistant", "id": "msg_2", "content": "b"},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        ],
    }
    req = decode_request(body)
    assert len(req.messages) == 1
    a, no, b, call = req.messages[0].parts
    assert isinstance(a, Text) and isinstance(no, Text) and isinstance(b, Text)
    assert isinstance(call, ToolCall)
    assert a.hints["seq"] == no.hints["seq"] == 0 and b.hints["seq"] == 1
    assert a.hints["item"] == {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
    }
    assert no.text == "no" and no.hints["type"] == "refusal"
    assert b.hints["string"] is True
    assert encode_request(req) == body


def test_edited_text_keeps_its_item_and_new_text_gets_a_new_item() -> None:
    body = {
        "model": "m",
        "input": [
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_1",
                "content": [{"type": "output_text", "text": "a"}],
            },
        ],
    }
    req = decode_request(body)
    part = req.messages[0].parts[0]
    assert isinstance(part, Text)
    part.text = "edited"
    req.messages[0].parts.append(Text("added"))
    edited, added = encode_request(req)["input"]
    assert edited == {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "content": [{"type": "output_text", "text": "edited"}],
    }
    assert added["id"].startswith("msg_") and added["id"] != "msg_1"
    assert added["content"] == [{"type": "output_text", "annotations": [], "text": "added"}]


def test_string_input_instructions_and_params() -> None:
    req = decode_request(fixture("sdk_request.json"))
    assert req.source is Wire.RESPONSES
    assert [t.text for t in req.system] == ["You are terse."]
    assert req.messages == [Message("user", [Text("What is 2 + 2?")])]
    p = req.params
    assert (p.max_tokens, p.temperature, p.top_p, p.stream) == (256, 0.2, 1, False)
    assert p.tool_choice == ToolChoice(mode="tool", name="calc")
    assert req.extra == {
        "metadata": {"session": "s-1"},
        "user": "u-42",
        "service_tier": "auto",
        "truncation": "disabled",
        "previous_response_id": None,
    }
    assert req.tools[0].extra == {"strict": True}


def test_reasoning_effort_is_a_param_and_the_rest_stays() -> None:
    req = decode_request(fixture("codex_turn.json"))
    assert req.params.effort == "high"
    assert req.extra["reasoning"] == {"summary": "auto"}
    req.params.effort = "low"
    assert encode_request(req)["reasoning"] == {"summary": "auto", "effort": "low"}


def test_tool_kinds() -> None:
    req = decode_request(fixture("codex_turn.json"))
    kinds = [(t.kind, t.name) for t in req.tools]
    assert kinds == [
        ("function", "exec_command"),
        ("custom", "apply_patch"),
        ("namespace", "mcp__files"),
        ("web_search", "web_search"),
        ("local_shell", "local_shell"),
    ]
    custom = req.tools[1]
    assert custom.parameters is None and custom.extra["format"]["syntax"] == "lark"
    namespace = req.tools[2]
    assert namespace.extra == fixture("codex_turn.json")["tools"][2]


def test_images_split_data_urls_and_keep_file_ids_opaque() -> None:
    body = {
        "model": "m",
        "input": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "input_image",
                        "image_url": "data:image/png;base64,AAAA",
                        "detail": "high",
                    },
                    {"type": "input_image", "image_url": "https://x/y.png"},
                    {"type": "input_image", "file_id": "file_1", "detail": "auto"},
                    {"type": "input_file", "file_id": "file_2"},
                ],
            }
        ],
    }
    parts = decode_request(body).messages[0].parts
    assert parts[0] == Image(data="AAAA", media_type="image/png", detail="high", hints={})
    assert parts[1] == Image(url="https://x/y.png", hints={"no_detail": True})
    assert isinstance(parts[2], Opaque) and isinstance(parts[3], Opaque)


def test_untyped_items_and_hosted_calls_are_not_part_of_a_turn() -> None:
    body = {
        "model": "m",
        "input": [
            {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
            {"type": "web_search_call", "id": "ws", "status": "completed"},
            {"role": "assistant", "content": "after"},
        ],
    }
    req = decode_request(body)
    assert [(m.role, len(m.parts)) for m in req.messages] == [
        ("assistant", 1),
        ("assistant", 1),
        ("assistant", 1),
    ]
    assert encode_request(req) == body


def test_a_file_in_a_function_output_is_an_opaque_item_of_the_result() -> None:
    """The output still answers its call (so turns see it), and re-encodes exactly."""
    file = {"type": "input_file", "file_id": "f"}
    item = {"type": "function_call_output", "call_id": "c", "output": [file]}
    req = decode_request({"model": "m", "input": [copy.deepcopy(item)]})
    assert req.messages[0].parts == [
        ToolResult("c", [Opaque(Wire.RESPONSES, file)], hints={"list": True})
    ]
    assert encode_request(req)["input"] == [item]


def test_a_file_in_a_function_output_is_refused_on_another_wire() -> None:
    item = {"type": "function_call_output", "call_id": "c", "output": [{"type": "input_file"}]}
    req = decode_request({"model": "m", "input": [item]})
    with pytest.raises(ProtocolError, match="input_file item of the openai-responses wire"):
        adapter(Wire.CHAT).encode_request(req)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ([], "body"),
        ({"input": "x"}, "model"),
        ({"model": "", "input": "x"}, "model"),
        ({"model": 3, "input": "x"}, "model"),
        ({"model": "m"}, "input"),
        ({"model": "m", "input": 5}, "input"),
        ({"model": "m", "input": ["x"]}, "input[0]"),
        ({"model": "m", "input": [{"role": 1, "content": "x"}]}, "input[0].role"),
        ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
        ({"model": "m", "input": [{"role": "user", "content": 1}]}, "input[0].content"),
        (
            {"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]},
            "input[0].content[0].text",
        ),
        (
            {"model": "m", "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
            "input[0].call_id",
        ),
        (
            {
                "model": "m",
                "input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}],
            },
            "input[0].arguments",
        ),
        (
            {"model": "m", "input": [{"type": "function_call_output", "call_id": "c"}]},
            "input[0].output",
        ),
        ({"model": "m", "input": [{"type": "reasoning", "id": "r"}]}, "input[0].summary"),
        (
            {"model": "m", "input": [{"type": "reasoning", "id": "r", "summary": [{"type": "s"}]}]},
            "input[0].summary[0].text",
        ),
        ({"model": "m", "input": "x", "instructions": 1}, "instructions"),
        ({"model": "m", "input": "x", "tools": {}}, "tools"),
        ({"model": "m", "input": "x", "tools": [{"name": "f"}]}, "tools[0].type"),
        ({"model": "m", "input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
        (
            {
                "model": "m",
                "input": "x",
                "tools": [{"type": "function", "name": "f", "parameters": []}],
            },
            "tools[0].parameters",
        ),
        ({"model": "m", "input": "x", "tool_choice": "sometimes"}, "tool_choice"),
        ({"model": "m", "input": "x", "tool_choice": 3}, "tool_choice"),
        ({"model": "m", "input": "x", "max_output_tokens": "9"}, "max_output_tokens"),
        ({"model": "m", "input": "x", "max_output_tokens": 1.5}, "max_output_tokens"),
        ({"model": "m", "input": "x", "temperature": True}, "temperature"),
        ({"model": "m", "input": "x", "top_p": "1"}, "top_p"),
        ({"model": "m", "input": "x", "stream": "yes"}, "stream"),
        ({"model": "m", "input": "x", "parallel_tool_calls": 1}, "parallel_tool_calls"),
        ({"model": "m", "input": "x", "reasoning": "high"}, "reasoning"),
        ({"model": "m", "input": "x", "reasoning": {"effort": 3}}, "reasoning.effort"),
    ],
)
def test_invalid_bodies_name_the_field(body: Any, param: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_request(body)
    assert caught.value.status == 400
    assert caught.value.param == param
    assert param in caught.value.message


def test_parts_a_lane_adds_take_this_wires_plain_shapes() -> None:
    req = decode_request(fixture("codex_turn.json"))
    req.messages.insert(1, Message("developer", [Text("state: {}")]))
    req.messages.append(Message("assistant", [ToolCall("call_s", "skill_state", "{}")]))
    req.messages.append(Message("tool", [ToolResult("call_s", [Text("ok")])]))
    items = encode_request(req)["input"]
    assert items[1] == {"type": "message", "role": "developer",
                        "content": [{"type": "input_text", "text": "state: {}"}]}  # fmt: skip
    assert items[-2:] == [
        {"type": "function_call", "call_id": "call_s", "name": "skill_state", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_s", "output": "ok"},
    ]


def test_a_named_tool_choice_follows_the_tool_kind_from_another_wire() -> None:
    def choice(kind: str) -> Any:
        tools = [Tool("t", kind=kind)]
        params = Params(tool_choice=ToolChoice("tool", "t"))
        return encode_request(Request("m", [], Wire.CHAT, tools=tools, params=params))[
            "tool_choice"
        ]

    assert choice("function") == {"type": "function", "name": "t"}
    assert choice("custom") == {"type": "custom", "name": "t"}


def test_a_stream_turned_off_drops_its_stream_options() -> None:
    """The gateway's own rounds (the handover) are read whole: the API takes
    ``stream_options`` only with a stream."""
    body = {
        "model": "m",
        "input": "hi",
        "stream": True,
        "stream_options": {"include_obfuscation": False},
    }
    request = decode_request(body)
    assert encode_request(request) == body
    request.params.stream = False
    sent = encode_request(request)
    assert sent["stream"] is False and "stream_options" not in sent
