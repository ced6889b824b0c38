"""Chat responses: identity law, usage and stop reasons, and bodies built from other wires."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion

from skillstate.conversation import (
    Image,
    Message,
    Opaque,
    ProtocolError,
    Reasoning,
    Request,
    Response,
    StopReason,
    Text,
    Tool,
    ToolCall,
    Usage,
    Wire,
)
from skillstate.protocols.openai_chat import decode_request, decode_response, encode_response

text = st.text(max_size=12)
ident = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=10)
count = st.integers(0, 10**6)
unknown = st.dictionaries(st.from_regex(r"x_[a-z]{1,5}", fullmatch=True), text, max_size=2)


def obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> Any:
    fixed = st.fixed_dictionaries(required, optional=optional or {})
    return st.tuples(fixed, unknown).map(lambda pair: {**pair[1], **pair[0]})


def nullable(values: Any) -> Any:
    return st.none() | values


call = st.builds(
    lambda i, name, args: {
        "id": i,
        "type": "function",
        "function": {"name": name, "arguments": args},
    },
    ident,
    ident,
    text,
) | st.builds(
    lambda i, name, raw: {"id": i, "type": "custom", "custom": {"name": name, "input": raw}},
    ident,
    ident,
    text,
)
message = obj(
    {},
    {
        "role": st.just("assistant"),
        "content": nullable(text),
        "refusal": nullable(text),
        "tool_calls": nullable(st.lists(call, max_size=3)),
        "annotations": st.just([]),
        "reasoning_content": text,
        "audio": st.none(),
    },
)
reasons = ["stop", "length", "tool_calls", "content_filter", "function_call", "eos"]
choice = obj(
    {"index": st.integers(0, 3), "message": message},
    {"finish_reason": nullable(st.sampled_from(reasons)), "logprobs": st.none()},
)
details = obj({}, {"cached_tokens": nullable(count), "audio_tokens": count})
usage = obj(
    {"prompt_tokens": count, "completion_tokens": count, "total_tokens": count},
    {
        "prompt_tokens_details": nullable(details),
        "completion_tokens_details": nullable(obj({}, {"reasoning_tokens": count})),
        "prompt_cache_hit_tokens": count,
    },
)
body = obj(
    {"choices": st.lists(choice, max_size=3)},
    {
        "id": nullable(ident | st.just("")),
        "object": nullable(st.just("chat.completion")),
        "created": nullable(count),
        "model": nullable(ident),
        "usage": nullable(usage),
        "system_fingerprint": nullable(text),
        "service_tier": st.just("default"),
    },
)


@settings(max_examples=200, deadline=None)
@given(body)
def test_identity_law(raw: dict[str, Any]) -> None:
    assert encode_response(decode_response(raw), None) == raw


OPENAI_BODY: dict[str, Any] = {
    "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
    "object": "chat.completion",
    "created": 1741570283,
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "I'll check.",
                "refusal": None,
                "annotations": [],
                "tool_calls": [
                    {
                        "id": "call_abc",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        },
        {
            "index": 1,
            "message": {"role": "assistant", "content": "Other sample."},
            "finish_reason": "stop",
        },
    ],
    "usage": {
        "prompt_tokens": 1117,
        "completion_tokens": 46,
        "total_tokens": 1163,
        "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 12, "audio_tokens": 0},
    },
    "service_tier": "default",
    "system_fingerprint": "fp_fc9f1d7035",
}


def test_decoded_response() -> None:
    resp = decode_response(OPENAI_BODY)
    assert (resp.id, resp.model, resp.created) == (
        "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "gpt-4o-2024-08-06",
        1741570283,
    )
    assert resp.source is Wire.CHAT and resp.stop_reason is StopReason.TOOL_CALLS
    assert resp.usage == Usage(input=1117, output=46, cached_input=1024, reasoning=12)
    said, call = resp.message.parts
    assert said == Text("I'll check.")
    assert isinstance(call, ToolCall) and call.arguments == '{"city":"Paris"}'
    assert resp.message.extra == {"refusal": None, "annotations": []}
    assert resp.extra["choices"][1]["message"]["content"] == "Other sample."
    assert resp.extra["system_fingerprint"] == "fp_fc9f1d7035"
    assert encode_response(resp, None) == OPENAI_BODY


def test_compatible_providers_reasoning_and_cache_counts() -> None:
    resp = decode_response(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "deepseek-reasoner",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "4", "reasoning_content": "2+2"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": 9,
                "total_tokens": 109,
                "prompt_cache_hit_tokens": 64,
                "prompt_cache_miss_tokens": 36,
            },
        }
    )
    reasoning, answer = resp.message.parts
    assert isinstance(reasoning, Reasoning) and reasoning.text == "2+2"
    assert answer == Text("4")
    assert resp.usage.cached_input == 64 and resp.usage.input == 100


@pytest.mark.parametrize(
    ("wire", "canonical"),
    [
        ("stop", StopReason.END),
        ("length", StopReason.LENGTH),
        ("tool_calls", StopReason.TOOL_CALLS),
        ("content_filter", StopReason.REFUSAL),
        ("function_call", StopReason.TOOL_CALLS),
        (None, None),
    ],
)
def test_finish_reasons(wire: str | None, canonical: StopReason | None) -> None:
    raw = {**OPENAI_BODY, "choices": [{**OPENAI_BODY["choices"][0], "finish_reason": wire}]}
    assert decode_response(raw).stop_reason == canonical


@pytest.mark.parametrize(
    ("canonical", "wire"),
    [
        (StopReason.END, "stop"),
        (StopReason.STOP_SEQUENCE, "stop"),
        (StopReason.PAUSE, "stop"),
        (StopReason.LENGTH, "length"),
        (StopReason.TOOL_CALLS, "tool_calls"),
        (StopReason.REFUSAL, "content_filter"),
        (StopReason.ERROR, "stop"),
        (None, "stop"),
    ],
)
def test_stop_reasons_of_other_wires(canonical: StopReason | None, wire: str) -> None:
    resp = Response("msg_1", "claude", Message("assistant", []), Wire.MESSAGES, canonical)
    assert encode_response(resp, None)["choices"][0]["finish_reason"] == wire


def test_a_response_from_another_wire() -> None:
    resp = Response(
        id="msg_01",
        model="claude-sonnet",
        source=Wire.MESSAGES,
        stop_reason=StopReason.TOOL_CALLS,
        usage=Usage(input=120, output=30, cached_input=100, cache_write=10, reasoning=5),
        message=Message(
            "assistant",
            [
                Reasoning("thinking", signature="sig"),
                Text("Part one. "),
                Text("Part two."),
                ToolCall("toolu_1", "read", '{"path":"a"}'),
                ToolCall("toolu_2", "apply_patch", '{"input":"*** Begin"}'),
            ],
            extra={"x": 1},
        ),
        extra={"type": "message"},
    )
    request = decode_request(
        {
            "model": "m",
            "messages": [],
            "tools": [{"type": "custom", "custom": {"name": "apply_patch"}}],
        }
    )
    body = encode_response(resp, request)
    parsed = ChatCompletion.model_validate(body)
    assert parsed.created == 0 and parsed.id == "msg_01"
    choice = parsed.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Part one. Part two."
    assert body["choices"][0]["message"]["tool_calls"] == [
        {
            "id": "toolu_1",
            "type": "function",
            "function": {"name": "read", "arguments": '{"path":"a"}'},
        },
        {
            "id": "toolu_2",
            "type": "custom",
            "custom": {"name": "apply_patch", "input": "*** Begin"},
        },
    ]
    assert "reasoning_content" not in body["choices"][0]["message"]
    assert "type" not in body
    assert parsed.usage is not None
    assert parsed.usage.prompt_tokens == 120 and parsed.usage.total_tokens == 150
    assert parsed.usage.prompt_tokens_details is not None
    assert parsed.usage.prompt_tokens_details.cached_tokens == 100
    assert parsed.usage.prompt_tokens_details.cache_write_tokens == 10
    assert parsed.usage.completion_tokens_details is not None
    assert parsed.usage.completion_tokens_details.reasoning_tokens == 5
    assert decode_response(body).usage == resp.usage


def test_custom_calls_stay_custom_without_a_request() -> None:
    call = ToolCall("call_1", "apply_patch", "*** Begin", kind="custom")
    resp = Response("r", "m", Message("assistant", [call]), Wire.RESPONSES, StopReason.TOOL_CALLS)
    calls = encode_response(resp, None)["choices"][0]["message"]["tool_calls"]
    assert calls == [
        {"id": "call_1", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin"}}
    ]
    assert decode_response(encode_response(resp, None)).message.parts == [
        ToolCall("call_1", "apply_patch", "*** Begin", kind="custom")
    ]


def test_a_response_built_from_a_stream_of_this_wire() -> None:
    """What the Accumulator gives for a Chat stream: no hints, but reasoning keyed."""
    resp = Response(
        id="chatcmpl-1",
        model="m",
        source=Wire.CHAT,
        created=7,
        stop_reason=StopReason.END,
        usage=Usage(input=3, output=2),
        message=Message(
            "assistant",
            [
                Reasoning("hmm", hints={"key": "reasoning_content"}),
                Text("a"),
                Text("b"),
                Text("no", hints={"refusal": True}),
            ],
        ),
        extra={"system_fingerprint": "fp"},
    )
    body = encode_response(resp, None)
    ChatCompletion.model_validate(body)
    assert body["object"] == "chat.completion" and body["system_fingerprint"] == "fp"
    assert body["choices"][0]["message"] == {
        "role": "assistant",
        "reasoning_content": "hmm",
        "content": "ab",
        "refusal": "no",
    }
    assert body["choices"][0]["index"] == 0


@pytest.mark.parametrize(
    "part",
    [Image(url="https://x.test/a.png"), Opaque(Wire.RESPONSES, {"type": "web_search_call"})],
)
def test_what_a_response_cannot_carry(part: Image | Opaque) -> None:
    resp = Response("r", "m", Message("assistant", [part]), Wire.RESPONSES)
    with pytest.raises(ProtocolError):
        encode_response(resp, None)


@pytest.mark.parametrize(
    "raw",
    [[], {"id": "x"}, {"choices": [1]}, {"choices": [{}]}, {"choices": [], "created": "now"}],
)
def test_invalid_responses(raw: Any) -> None:
    with pytest.raises(ProtocolError):
        decode_response(raw)


def test_usage_is_read_leniently() -> None:
    raw = {"choices": [], "usage": {"prompt_tokens": "many", "completion_tokens": True}}
    resp = decode_response(raw)
    assert resp.usage == Usage()
    assert encode_response(resp, None) == raw
    resp.usage = Usage(input=5, output=1)
    assert encode_response(resp, None)["usage"]["total_tokens"] == 6


def test_tools_named_in_the_request_only_change_calls_of_other_wires() -> None:
    request = Request("m", [], Wire.CHAT, tools=[Tool("apply_patch", kind="custom")])
    call = ToolCall("c", "apply_patch", '{"input":"x"}')
    native = Response("r", "m", Message("assistant", [call]), Wire.CHAT, StopReason.TOOL_CALLS)
    entry = encode_response(native, request)["choices"][0]["message"]["tool_calls"][0]
    assert entry["type"] == "function"
