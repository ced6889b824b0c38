"""Request bodies of this wire: validation, what each field becomes, and the identity law."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from anthropic_messages_samples import (
    CLAUDE_CODE_BODY,
    COUNT_TOKENS_BODY,
    HANDWRITTEN_REQUESTS,
    REQUEST_BODIES,
    SDK_BODY,
    assert_sdk_shape,
    recorded_requests,
)
from hypothesis import given, settings

from skillstate.conversation import (
    ArchiveRef,
    CacheMark,
    Image,
    Json,
    Message,
    Opaque,
    ProtocolError,
    Reasoning,
    Response,
    Text,
    Tool,
    ToolCall,
    ToolChoice,
    ToolResult,
    Wire,
)
from skillstate.protocols import adapter
from skillstate.protocols.anthropic_messages import (
    ADAPTER,
    decode_request,
    encode_request,
    encode_response,
)
from skillstate.support.jsonio import loads


def test_the_adapter_is_registered_for_its_wire() -> None:
    assert adapter(Wire.MESSAGES) is ADAPTER
    assert ADAPTER.path == "/v1/messages"
    assert ADAPTER.wire is Wire.MESSAGES


@settings(max_examples=200, deadline=None)
@given(REQUEST_BODIES)
def test_identity_on_generated_bodies(body: dict[str, Any]) -> None:
    original = copy.deepcopy(body)
    assert encode_request(decode_request(body)) == original


@pytest.mark.parametrize("name", sorted(HANDWRITTEN_REQUESTS))
def test_identity_on_realistic_bodies(name: str) -> None:
    body = HANDWRITTEN_REQUESTS[name]
    assert encode_request(decode_request(copy.deepcopy(body))) == body


#: Real-client bodies when another helper recorded them; the hand-written ones otherwise.
RECORDED_REQUESTS = recorded_requests() or {
    f"handwritten/{name}": body for name, body in HANDWRITTEN_REQUESTS.items()
}


@pytest.mark.parametrize("name", sorted(RECORDED_REQUESTS))
def test_identity_on_recorded_bodies(name: str) -> None:
    body = RECORDED_REQUESTS[name]
    assert encode_request(decode_request(copy.deepcopy(body))) == body


@pytest.mark.parametrize("name", sorted(RECORDED_REQUESTS))
def test_recorded_bodies_rebuilt_from_canonical_fields_only_stay_valid(name: str) -> None:
    """As if another wire had sent the same conversation: no extra, no hints."""
    req = decode_request(copy.deepcopy(RECORDED_REQUESTS[name]))
    req.source = Wire.CHAT
    req.tools = [tool for tool in req.tools if tool.kind == "function"]
    body = encode_request(req)
    assert_sdk_shape(body)
    assert [m["role"] for m in body["messages"]][:1] in ([], ["user"])


def test_a_claude_code_body_decodes_to_the_canonical_parts() -> None:
    req = decode_request(copy.deepcopy(CLAUDE_CODE_BODY))
    assert req.source is Wire.MESSAGES
    assert [t.cache for t in req.system] == [None, CacheMark(), CacheMark()]
    assert [m.role for m in req.messages] == ["user", "assistant", "user", "system", "user"]
    thinking, redacted, text, bash, read = req.messages[1].parts
    assert thinking == Reasoning(
        "I should run ls.", signature=CLAUDE_CODE_BODY["messages"][1]["content"][0]["signature"]
    )
    assert redacted == Reasoning(signature="EmwKAhgBEgy3va3pzix", redacted=True)
    assert text == Text("I'll list them.")
    assert isinstance(bash, ToolCall) and bash.name == "Bash"
    assert bash.arguments == '{"command":"ls -la","description":"List files","timeout":15000.0}'
    assert isinstance(read, ToolCall)
    assert loads(read.arguments) == {"file_path": "/repo/a.py", "offset": 18446744073709551617}
    first, second = req.messages[2].parts
    assert first == ToolResult(
        "toolu_01A09q90qw90lq917835lq9",
        [Text("a.txt\nb.txt")],
        hints={"content": "str", "is_error": True},
    )
    assert isinstance(second, ToolResult) and second.cache == CacheMark()
    assert second.content == [Text("1\tprint('hi')"), Image(data="iVBOR", media_type="image/png")]
    assert req.messages[3] == Message(
        "system", [Text(CLAUDE_CODE_BODY["messages"][3]["content"])], hints={"content": "str"}
    )
    document = req.messages[4].parts[1]
    assert document == Opaque(Wire.MESSAGES, CLAUDE_CODE_BODY["messages"][4]["content"][1])
    assert req.params.effort == "high" and req.params.thinking_budget is None
    assert req.params.tool_choice == ToolChoice("auto")
    assert set(req.extra) == {"metadata", "context_management"}


TOOL_SEARCH = (
    Path(__file__).parents[1] / "fixtures" / "handwritten" / "claude-code-tool-search.json"
)


def test_a_tool_search_result_is_a_tool_result_holding_its_references() -> None:
    """Claude Code's ToolSearch answers with ``tool_reference`` blocks: the result still
    answers its call, each reference an opaque item of it, and the body re-encodes exactly."""
    body = loads(TOOL_SEARCH.read_bytes())
    req = decode_request(copy.deepcopy(body))
    reference = body["messages"][2]["content"][0]["content"][0]
    assert req.messages[2] == Message(
        "user", [ToolResult("toolu_search1", [Opaque(Wire.MESSAGES, reference)])]
    )
    assert encode_request(req) == body


def test_other_blocks_of_a_tool_result_are_opaque_items_in_order() -> None:
    document = {"type": "document", "source": {"type": "text", "media_type": "text/plain"}}
    found = {"type": "search_result", "source": "s", "title": "t", "content": []}
    stray = {"type": "tool_use", "id": "t2", "name": "n", "input": {}}  # the API refuses it
    block = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": "see"}, document, found, stray],
        "is_error": True,
    }
    body = _message(copy.deepcopy(block))
    (result,) = decode_request(body).messages[0].parts
    assert isinstance(result, ToolResult) and result.is_error
    assert result.content == [
        Text("see"),
        Opaque(Wire.MESSAGES, document),
        Opaque(Wire.MESSAGES, found),
        Opaque(Wire.MESSAGES, stray),
    ]
    assert encode_request(decode_request(copy.deepcopy(body))) == _message(block)


def test_tools_become_function_tools_and_provider_tools_stay_whole() -> None:
    req = decode_request(copy.deepcopy(CLAUDE_CODE_BODY))
    bash, search, web = req.tools
    assert (
        bash.kind == "function" and bash.parameters == CLAUDE_CODE_BODY["tools"][0]["input_schema"]
    )
    assert search.cache == CacheMark() and search.extra == {"defer_loading": True}
    assert web == Tool(
        "web_search", kind="web_search_20250305", extra={"name": "web_search", "max_uses": 5}
    )
    custom = decode_request(copy.deepcopy(SDK_BODY)).tools[0]
    assert custom.kind == "function" and custom.extra == {"strict": True}


def test_parameters_map_to_the_canonical_ones() -> None:
    params = decode_request(copy.deepcopy(SDK_BODY)).params
    assert params.max_tokens == 1024
    assert params.temperature == 0.2
    assert params.stop == ["\n\nHuman:"]
    assert params.thinking_budget == 2048
    assert params.tool_choice == ToolChoice("required")
    assert params.parallel_tool_calls is False
    assert params.stream is False


@pytest.mark.parametrize(
    ("choice", "mode", "name", "parallel"),
    [
        ({"type": "auto"}, "auto", None, None),
        ({"type": "any", "disable_parallel_tool_use": False}, "required", None, True),
        ({"type": "tool", "name": "Bash"}, "tool", "Bash", None),
        ({"type": "none"}, "none", None, None),
    ],
)
def test_tool_choices(
    choice: dict[str, Any], mode: str, name: str | None, parallel: bool | None
) -> None:
    body = {"model": "m", "messages": [], "tool_choice": choice}
    params = decode_request(body).params
    assert params.tool_choice == ToolChoice(mode, name)
    assert params.parallel_tool_calls is parallel


def test_an_unknown_tool_choice_has_no_canonical_choice_and_re_emits() -> None:
    body = {"model": "m", "messages": [], "tool_choice": {"type": "future", "x": 1}}
    req = decode_request(copy.deepcopy(body))
    assert req.params.tool_choice is None
    assert encode_request(req) == body


def test_a_count_tokens_body_needs_no_max_tokens() -> None:
    req = decode_request(copy.deepcopy(COUNT_TOKENS_BODY))
    assert req.params.max_tokens is None
    assert "max_tokens" not in encode_request(req)


def test_a_field_sent_as_null_is_unset_and_re_emitted() -> None:
    body = {"model": "m", "messages": [], "temperature": None, "system": None}
    req = decode_request(copy.deepcopy(body))
    assert req.params.temperature is None and req.system == []
    assert encode_request(req) == body
    req.params.temperature = 0.5
    assert encode_request(req)["temperature"] == 0.5


def test_lane_changes_are_encoded_over_the_original_shapes() -> None:
    req = decode_request(copy.deepcopy(SDK_BODY))
    req.system.append(Text("More.", cache=CacheMark()))
    req.messages[0].parts.append(Text("(and London)"))
    req.params.thinking_budget = 4096
    req.params.tool_choice = ToolChoice("tool", "get_weather")
    req.messages.append(Message("tool", [ToolResult("toolu_1", [Text("sunny")])]))
    body = encode_request(req)
    assert body["system"] == [
        {"type": "text", "text": "Be brief."},
        {"type": "text", "text": "More.", "cache_control": {"type": "ephemeral"}},
    ]
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "What is the weather in Paris?"},
        {"type": "text", "text": "(and London)"},
    ]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["tool_choice"] == {
        "type": "tool",
        "name": "get_weather",
        "disable_parallel_tool_use": True,
    }
    assert body["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "sunny"}],
            }
        ],
    }


def test_changed_effort_keeps_the_other_output_config_fields() -> None:
    fmt = {"type": "json_schema", "schema": {"type": "object"}}
    body = {"model": "m", "messages": [], "output_config": {"effort": "low", "format": fmt}}
    req = decode_request(body)
    req.params.effort = "high"
    assert encode_request(req)["output_config"] == {"format": fmt, "effort": "high"}
    req.params.effort = None
    assert encode_request(req)["output_config"] == {"format": fmt}


def test_changed_arguments_of_a_tool_call_are_sent_as_an_object() -> None:
    body = {
        "model": "m",
        "messages": [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {"a": 1}}],
            }
        ],
    }
    req = decode_request(body)
    call = req.messages[0].parts[0]
    assert isinstance(call, ToolCall)
    call.arguments = '{"a": 2, "b": [1, 2]}'
    assert encode_request(req)["messages"][0]["content"][0]["input"] == {"a": 2, "b": [1, 2]}
    call.arguments = "[1]"
    with pytest.raises(ProtocolError, match="not a JSON object"):
        encode_request(req)


def _body(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [], **fields}


def _message(*blocks: Any) -> dict[str, Any]:
    return _body(messages=[{"role": "user", "content": list(blocks)}])


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ([], "body"),
        ({"messages": []}, "model"),
        ({"model": "", "messages": []}, "model"),
        ({"model": 3, "messages": []}, "model"),
        ({"model": "m"}, "messages"),
        (_body(messages={}), "messages"),
        (_body(messages=["hi"]), "messages[0]"),
        (_body(messages=[{"role": "tool", "content": "x"}]), "messages[0].role"),
        (_body(messages=[{"role": "user"}]), "messages[0].content"),
        (_body(messages=[{"role": "user", "content": 3}]), "messages[0].content"),
        (_message("text"), "messages[0].content[0]"),
        (_message({"text": "x"}), "messages[0].content[0].type"),
        (_message({"type": "text"}), "messages[0].content[0].text"),
        (
            _message({"type": "text", "text": "x", "cache_control": "y"}),
            "messages[0].content[0].cache_control",
        ),
        (
            _message({"type": "tool_use", "id": "t", "name": "n", "input": "{}"}),
            "messages[0].content[0].input",
        ),
        (_message({"type": "tool_use", "name": "n", "input": {}}), "messages[0].content[0].id"),
        (_message({"type": "tool_result", "content": "x"}), "messages[0].content[0].tool_use_id"),
        (
            _message({"type": "tool_result", "tool_use_id": "t", "is_error": "no"}),
            "messages[0].content[0].is_error",
        ),
        (
            _message({"type": "tool_result", "tool_use_id": "t", "content": 5}),
            "messages[0].content[0].content",
        ),
        (_message({"type": "image", "source": "x"}), "messages[0].content[0].source"),
        (
            _message({"type": "image", "source": {"type": "base64", "data": "x"}}),
            "messages[0].content[0].source.media_type",
        ),
        (_message({"type": "thinking", "signature": "s"}), "messages[0].content[0].thinking"),
        (_message({"type": "redacted_thinking"}), "messages[0].content[0].data"),
        (_body(system=5), "system"),
        (_body(system=[{"type": "image", "source": {"type": "url", "url": "u"}}]), "system[0]"),
        (_body(tools={}), "tools"),
        (_body(tools=[{"input_schema": {}}]), "tools[0].name"),
        (_body(tools=[{"name": "n"}]), "tools[0].input_schema"),
        (_body(tools=[{"type": 3, "name": "n"}]), "tools[0].type"),
        (_body(max_tokens=True), "max_tokens"),
        (_body(max_tokens=1.5), "max_tokens"),
        (_body(temperature="hot"), "temperature"),
        (_body(top_p=False), "top_p"),
        (_body(stop_sequences="x"), "stop_sequences"),
        (_body(stop_sequences=["x", 1]), "stop_sequences[1]"),
        (_body(stream="yes"), "stream"),
        (_body(tool_choice="auto"), "tool_choice"),
        (_body(tool_choice={}), "tool_choice.type"),
        (_body(tool_choice={"type": "tool"}), "tool_choice.name"),
        (
            _body(tool_choice={"type": "auto", "disable_parallel_tool_use": 1}),
            "tool_choice.disable_parallel_tool_use",
        ),
        (_body(thinking={"budget_tokens": 5}), "thinking.type"),
        (_body(thinking={"type": "enabled", "budget_tokens": "5"}), "thinking.budget_tokens"),
        (_body(output_config={"effort": 1}), "output_config.effort"),
        (_body(output_config=[]), "output_config"),
    ],
)
def test_invalid_bodies_name_the_field(body: Any, param: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_request(body)
    assert caught.value.status == 400
    assert caught.value.param == param
    assert param in caught.value.message


def test_lane_added_roles_tools_and_provider_tool_cache() -> None:
    req = decode_request(
        {
            "model": "m",
            "messages": [],
            "tools": [
                {"type": "bash_20250124", "name": "bash", "cache_control": {"type": "ephemeral"}}
            ],
        }
    )
    assert req.tools[0].cache == CacheMark()
    req.tools[0].cache = None
    req.tools.append(Tool("apply_patch", kind="custom"))
    req.messages.append(Message("developer", [Text("Be careful.")]))
    body = encode_request(req)
    assert body["tools"] == [
        {"type": "bash_20250124", "name": "bash"},
        {
            "name": "apply_patch",
            "input_schema": {
                "type": "object",
                "properties": {"input": {"type": "string"}},
                "required": ["input"],
            },
        },
    ]
    assert body["messages"] == [
        {"role": "system", "content": [{"type": "text", "text": "Be careful."}]}
    ]


def test_an_unrendered_archive_ref_is_an_internal_error() -> None:
    req = decode_request({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    req.messages[0].parts.append(ArchiveRef("sha256:ab"))
    with pytest.raises(ProtocolError, match="must be rendered") as caught:
        encode_request(req)
    assert caught.value.status == 500


def _history(*assistant: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [
            {"role": "user", "content": "list files"},
            {"role": "assistant", "content": list(assistant)},
            {"role": "user", "content": "thanks"},
        ],
    }


def test_unsigned_thinking_in_the_history_is_left_out() -> None:
    """Reasoning another provider made reached the client with no signature of this wire; the
    API refuses such a block, so the request bound upstream leaves it out."""
    text = {"type": "text", "text": "Listing."}
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    body = _history(
        {"type": "thinking", "thinking": "from gpt", "signature": ""},
        text,
        {"type": "thinking", "thinking": "no signature at all"},
        call,
    )
    sent = encode_request(decode_request(body))
    assert sent["messages"][1] == {"role": "assistant", "content": [text, call]}


def test_signed_and_redacted_thinking_in_the_history_are_kept() -> None:
    signed = {"type": "thinking", "thinking": "I should run ls.", "signature": "EqQBCkYIBxgCKkB"}
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}
    body = _history(signed, redacted, {"type": "text", "text": "Listing."})
    assert encode_request(decode_request(copy.deepcopy(body))) == body


def test_thinking_a_reply_from_another_wire_showed_is_not_sent_back() -> None:
    """The whole way: a Chat reply's reasoning is shown to the client as thinking with an empty
    signature, comes back in the next request, and is left out of what goes upstream."""
    reply = Response(
        "chatcmpl-1",
        "gpt-5",
        Message("assistant", [Reasoning("thinking it over"), Text("Hello.")]),
        Wire.CHAT,
    )
    shown = encode_response(reply, None)["content"]
    assert shown[0] == {"type": "thinking", "thinking": "thinking it over", "signature": ""}
    sent = encode_request(decode_request(_history(*shown)))
    assert sent["messages"][1]["content"] == [{"type": "text", "text": "Hello."}]


@pytest.mark.parametrize(
    ("sent", "mark", "hinted"),
    [
        ({"type": "ephemeral"}, CacheMark(), False),
        ({"type": "ephemeral", "ttl": "1h"}, CacheMark("1h"), False),
        ({"ttl": "1h", "type": "ephemeral"}, CacheMark("1h"), True),
        ({"type": "ephemeral", "scope": "global"}, CacheMark(), True),
    ],
)
def test_a_cache_control_object_is_a_cache_mark(sent: Json, mark: CacheMark, hinted: bool) -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }
    body["messages"][0]["content"][0]["cache_control"] = sent
    req = decode_request(copy.deepcopy(body))
    part = req.messages[0].parts[0]
    assert isinstance(part, Text) and part.cache == mark
    assert ("cache_control" in part.hints) is hinted
    assert list(encode_request(req)["messages"][0]["content"][0]["cache_control"].items()) == list(
        sent.items()
    )


def test_a_changed_cache_mark_is_written_anew() -> None:
    block = {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral", "scope": "x"}}
    req = decode_request({"model": "m", "messages": [{"role": "user", "content": [block]}]})
    part = req.messages[0].parts[0]
    assert isinstance(part, Text)
    part.cache = CacheMark("1h")
    encoded = encode_request(req)["messages"][0]["content"][0]
    assert encoded["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    part.cache = None
    assert "cache_control" not in encode_request(req)["messages"][0]["content"][0]
