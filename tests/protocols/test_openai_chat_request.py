"""Chat requests: the identity law on generated bodies, what decoding yields, and validation."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillstate.conversation import (
    Image,
    Opaque,
    ProtocolError,
    Reasoning,
    Text,
    ToolCall,
    ToolChoice,
    ToolResult,
    Wire,
)
from skillstate.protocols import adapter
from skillstate.protocols.openai_chat import decode_request, encode_request
from skillstate.support.jsonio import dumps, loads

text = st.text(max_size=12)
ident = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=10)
scalar = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_value = st.recursive(
    scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3)
)
unknown = st.dictionaries(st.from_regex(r"x_[a-z]{1,5}", fullmatch=True), json_value, max_size=2)


def obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> Any:
    """An object with ``required`` keys, any of ``optional`` keys, and unknown ``x_`` keys."""
    fixed = st.fixed_dictionaries(required, optional=optional or {})
    return st.tuples(fixed, unknown).map(lambda pair: {**pair[1], **pair[0]})


def nullable(values: Any) -> Any:
    return st.none() | values


urls = st.sampled_from(
    [
        "https://example.com/cat.png",
        "data:image/png;base64,iVBORw0KGgo=",
        "data:image/jpeg;base64,",
        "data:image/svg+xml,<svg/>",
        "data:;base64,AAAA",
        "data:image/png;BASE64,AAAA",
        "data:image/png;charset=utf-8;base64,AAAA",
    ]
)
text_part = obj({"type": st.just("text"), "text": text}, {"prompt_cache_breakpoint": json_value})
image_part = obj(
    {
        "type": st.just("image_url"),
        "image_url": obj({"url": urls}, {"detail": nullable(st.sampled_from(["auto", "low"]))}),
    }
)
other_part = st.sampled_from(
    [
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "file", "file": {"file_id": "file-1", "filename": "a.pdf"}},
        {"type": "refusal", "refusal": "no"},
    ]
)
any_part = text_part | image_part | other_part

function_call = obj(
    {
        "id": ident,
        "type": st.just("function"),
        "function": obj({"name": ident, "arguments": text}),
    }
)
untyped_call = st.fixed_dictionaries(
    {"id": ident, "function": st.fixed_dictionaries({"name": ident, "arguments": text})}
)
custom_call = obj(
    {"id": ident, "type": st.just("custom"), "custom": obj({"name": ident, "input": text})}
)
other_call = obj({"type": st.just("mcp_call"), "id": ident, "server": ident})
tool_call = function_call | untyped_call | custom_call | other_call

plain = {"name": ident}
system_message = obj(
    {"role": st.sampled_from(["system", "developer"]), "content": text | st.lists(text_part)},
    plain,
)
user_message = obj({"role": st.just("user"), "content": text | st.lists(any_part)}, plain)
assistant_message = obj(
    {"role": st.just("assistant")},
    {
        "content": nullable(text | st.lists(text_part | other_part, max_size=3)),
        "tool_calls": nullable(st.lists(tool_call, max_size=3)),
        "reasoning_content": nullable(text),
        "reasoning": nullable(text | st.just({"summary": "x"})),
        "refusal": nullable(text),
        "audio": nullable(st.just({"id": "audio_1"})),
        "name": ident,
        "function_call": st.just({"name": "f", "arguments": "{}"}),
    },
)
tool_message = obj(
    {
        "role": st.just("tool"),
        "tool_call_id": ident,
        "content": text | st.lists(text_part, max_size=3),
    }
)
function_message = st.fixed_dictionaries(
    {"role": st.just("function"), "name": ident, "content": nullable(text)}
)
message = system_message | user_message | assistant_message | tool_message | function_message

schema = st.fixed_dictionaries(
    {"type": st.just("object"), "properties": st.dictionaries(ident, st.just({"type": "string"}))}
)
function_tool = obj(
    {
        "type": st.just("function"),
        "function": obj(
            {"name": ident},
            {
                "description": nullable(text),
                "parameters": nullable(schema),
                "strict": nullable(st.booleans()),
            },
        ),
    }
)
custom_tool = obj(
    {
        "type": st.just("custom"),
        "custom": obj(
            {"name": ident},
            {"description": nullable(text), "format": st.just({"type": "text"})},
        ),
    }
)
other_tool = st.sampled_from(
    [
        {"type": "web_search_preview", "search_context_size": "low"},
        {"type": "namespace", "name": "mcp", "tools": [{"name": "read"}]},
    ]
)
tool_choice = st.sampled_from(["auto", "none", "required"]) | st.builds(
    lambda kind, name: {"type": kind, kind: {"name": name}},
    st.sampled_from(["function", "custom"]),
    ident,
)
allowed_tools = st.just({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}})
json_schema = obj(
    {"name": ident},
    {"schema": st.just({"type": "object"}), "strict": nullable(st.booleans()), "description": text},
).map(lambda inner: {"type": "json_schema", "json_schema": inner})
response_format = st.sampled_from([{"type": "json_object"}, {"type": "text"}]) | json_schema

body = obj(
    {"model": ident, "messages": st.lists(message, max_size=6)},
    {
        "tools": nullable(st.lists(function_tool | custom_tool | other_tool, max_size=3)),
        "tool_choice": nullable(tool_choice | allowed_tools),
        "parallel_tool_calls": nullable(st.booleans()),
        "max_tokens": nullable(st.integers(1, 10**6)),
        "max_completion_tokens": nullable(st.integers(1, 10**6)),
        "temperature": nullable(st.floats(0, 2) | st.integers(0, 2)),
        "top_p": nullable(st.floats(0, 1)),
        "stop": nullable(text | st.lists(text, max_size=4)),
        "stream": nullable(st.booleans()),
        "stream_options": nullable(st.just({"include_usage": True})),
        "reasoning_effort": nullable(st.sampled_from(["minimal", "low", "high"])),
        "seed": st.integers(),
        "n": nullable(st.integers(1, 3)),
        "logprobs": nullable(st.booleans()),
        "top_logprobs": nullable(st.integers(0, 20)),
        "user": text,
        "response_format": nullable(response_format),
    },
)


@settings(max_examples=200, deadline=None)
@given(body)
def test_identity_law(raw: dict[str, Any]) -> None:
    assert encode_request(decode_request(raw)) == raw


@settings(max_examples=50, deadline=None)
@given(body)
def test_identity_law_through_json_bytes(raw: dict[str, Any]) -> None:
    """What the server does: bytes in, bytes out; big integers survive."""
    parsed = loads(dumps(raw))
    assert loads(dumps(encode_request(decode_request(parsed)))) == parsed


def test_adapter_is_registered() -> None:
    chat = adapter(Wire.CHAT)
    assert chat.wire is Wire.CHAT
    assert chat.path == "/v1/chat/completions"
    assert chat.decode_request is decode_request


def test_decoded_parts() -> None:
    req = decode_request(
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "developer", "content": "Answer briefly."},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "what is this?"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
                        {"type": "image_url", "image_url": {"url": "https://x.test/a.jpg"}},
                        {"type": "input_audio", "input_audio": {"data": "", "format": "mp3"}},
                    ],
                    "name": "ann",
                },
                {
                    "role": "assistant",
                    "reasoning_content": "thinking",
                    "content": "Let me look.",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        },
                        {
                            "id": "c2",
                            "type": "custom",
                            "custom": {"name": "patch", "input": "*** x"},
                        },
                    ],
                    "refusal": None,
                },
                {"role": "tool", "tool_call_id": "c1", "content": "done"},
            ],
        }
    )
    assert req.source is Wire.CHAT and req.system == []
    developer, user, assistant, tool = req.messages
    assert developer.role == "developer" and developer.parts == [Text("Answer briefly.")]
    assert user.extra == {"name": "ann"}
    assert user.parts[1] == Image(data="QUJD", media_type="image/png")
    assert user.parts[2] == Image(url="https://x.test/a.jpg")
    assert isinstance(user.parts[3], Opaque) and user.parts[3].wire is Wire.CHAT
    reasoning, said, call, custom = assistant.parts
    assert isinstance(reasoning, Reasoning) and reasoning.text == "thinking"
    assert said == Text("Let me look.")
    assert isinstance(call, ToolCall) and (call.id, call.name, call.kind) == ("c1", "f", "function")
    assert isinstance(custom, ToolCall) and custom.kind == "custom" and custom.arguments == "*** x"
    assert assistant.extra == {"refusal": None}
    assert tool.role == "tool"
    assert tool.parts == [ToolResult("c1", [Text("done")], hints={"content": "string"})]


def test_decoded_tools_and_params() -> None:
    req = decode_request(
        {
            "model": "m",
            "messages": [],
            "tools": [
                {"type": "function", "function": {"name": "f", "parameters": {}, "strict": True}},
                {"type": "custom", "custom": {"name": "g", "format": {"type": "text"}}},
                {"type": "web_search_preview"},
            ],
            "tool_choice": {"type": "custom", "custom": {"name": "g"}},
            "max_completion_tokens": 100,
            "stop": "END",
            "reasoning_effort": "high",
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    )
    f, g, web = req.tools
    assert (f.kind, f.parameters, f.extra) == ("function", {}, {"function": {"strict": True}})
    assert (g.kind, g.extra) == ("custom", {"custom": {"format": {"type": "text"}}})
    assert (web.kind, web.extra) == ("web_search_preview", {"type": "web_search_preview"})
    assert req.params.tool_choice == ToolChoice("tool", "g")
    assert req.params.max_tokens == 100 and req.hints["max_key"] == "max_completion_tokens"
    assert req.params.stop == ["END"] and req.params.effort == "high" and req.params.stream
    assert req.extra == {"stream_options": {"include_usage": True}}


def test_a_changed_request_keeps_its_shape() -> None:
    """A lane edits the canonical fields; the rest of the client's body is kept."""
    req = decode_request(
        {
            "model": "m",
            "messages": [{"role": "user", "content": "hi", "name": "u"}],
            "max_tokens": 10,
            "stop": "x",
            "tool_choice": "auto",
            "tools": [{"type": "function", "function": {"name": "f", "description": "old"}}],
        }
    )
    req.params.max_tokens = 20
    req.params.stop = ["x", "y"]
    req.params.tool_choice = ToolChoice("tool", "f")
    req.tools[0].description = "new"
    req.messages[0].parts.append(Text("more"))
    assert encode_request(req) == {
        "model": "m",
        "messages": [
            {
                "role": "user",
                "name": "u",
                "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "more"}],
            }
        ],
        "max_tokens": 20,
        "stop": ["x", "y"],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "tools": [{"type": "function", "function": {"name": "f", "description": "new"}}],
    }


def test_turning_streaming_off_drops_stream_options() -> None:
    req = decode_request(
        {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}}
    )
    req.params.stream = False
    assert encode_request(req) == {"model": "m", "messages": [], "stream": False}


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        ([], "body"),
        ({"messages": []}, "model"),
        ({"model": "", "messages": []}, "model"),
        ({"model": 3, "messages": []}, "model"),
        ({"model": "m"}, "messages"),
        ({"model": "m", "messages": {}}, "messages"),
        ({"model": "m", "messages": ["hi"]}, "messages[0]"),
        ({"model": "m", "messages": [{"content": "hi"}]}, "messages[0].role"),
        ({"model": "m", "messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role"),
        ({"model": "m", "messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        (
            {"model": "m", "messages": [{"role": "user", "content": [{"text": "a"}]}]},
            "messages[0].content[0].type",
        ),
        (
            {"model": "m", "messages": [{"role": "user", "content": [{"type": "text"}]}]},
            "messages[0].content[0].text",
        ),
        (
            {
                "model": "m",
                "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
            },
            "messages[0].content[0].image_url.url",
        ),
        (
            {"model": "m", "messages": [{"role": "tool", "content": "x"}]},
            "messages[0].tool_call_id",
        ),
        (
            {
                "model": "m",
                "messages": [
                    {"role": "tool", "tool_call_id": "c", "content": [{"type": "file", "file": {}}]}
                ],
            },
            "messages[0].content[0]",
        ),
        (
            {"model": "m", "messages": [{"role": "assistant", "tool_calls": {}}]},
            "messages[0].tool_calls",
        ),
        (
            {"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]},
            "messages[0].tool_calls[0].function",
        ),
        (
            {
                "model": "m",
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "c",
                                "type": "function",
                                "function": {"name": "f", "arguments": {}},
                            }
                        ],
                    }
                ],
            },
            "messages[0].tool_calls[0].function.arguments",
        ),
        ({"model": "m", "messages": [], "tools": {}}, "tools"),
        ({"model": "m", "messages": [], "tools": [{"function": {}}]}, "tools[0].type"),
        ({"model": "m", "messages": [], "tools": [{"type": "function"}]}, "tools[0].function"),
        (
            {"model": "m", "messages": [], "tools": [{"type": "function", "function": {}}]},
            "tools[0].function.name",
        ),
        (
            {
                "model": "m",
                "messages": [],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": "{}"}}],
            },
            "tools[0].function.parameters",
        ),
        ({"model": "m", "messages": [], "tool_choice": "any"}, "tool_choice"),
        ({"model": "m", "messages": [], "tool_choice": 1}, "tool_choice"),
        (
            {"model": "m", "messages": [], "tool_choice": {"type": "function"}},
            "tool_choice.function",
        ),
        ({"model": "m", "messages": [], "temperature": "hot"}, "temperature"),
        ({"model": "m", "messages": [], "temperature": True}, "temperature"),
        ({"model": "m", "messages": [], "max_tokens": 1.5}, "max_tokens"),
        ({"model": "m", "messages": [], "max_completion_tokens": "9"}, "max_completion_tokens"),
        ({"model": "m", "messages": [], "stream": "yes"}, "stream"),
        ({"model": "m", "messages": [], "stop": 5}, "stop"),
        ({"model": "m", "messages": [], "stop": ["a", 5]}, "stop[1]"),
        ({"model": "m", "messages": [], "parallel_tool_calls": 1}, "parallel_tool_calls"),
        ({"model": "m", "messages": [], "reasoning_effort": 2}, "reasoning_effort"),
    ],
)
def test_invalid_bodies_name_the_field(raw: Any, param: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_request(raw)
    assert caught.value.status == 400
    assert caught.value.param == param
    assert param in caught.value.message
