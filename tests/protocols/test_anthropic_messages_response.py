"""Non-streaming response bodies: the identity law, the usage contract, stop reasons, and bodies
built from another wire's response, checked by the SDK's own model."""

from __future__ import annotations

import copy
from typing import Any

import anthropic.types
import pytest
from anthropic_messages_samples import RESPONSE_BODIES, RESPONSE_BODY
from hypothesis import given, settings

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
    ToolCall,
    Usage,
    Wire,
)
from skillstate.protocols.anthropic_messages import decode_response, encode_response


@settings(max_examples=200, deadline=None)
@given(RESPONSE_BODIES)
def test_identity_on_generated_bodies(body: dict[str, Any]) -> None:
    original = copy.deepcopy(body)
    assert encode_response(decode_response(body), None) == original


def test_identity_on_a_realistic_body() -> None:
    body = copy.deepcopy(RESPONSE_BODY)
    assert encode_response(decode_response(body), None) == RESPONSE_BODY


def test_a_response_decodes_to_canonical_parts_and_usage() -> None:
    resp = decode_response(copy.deepcopy(RESPONSE_BODY))
    assert resp.id == "msg_01XFDUDYJgAACzvnptvVoYEL" and resp.source is Wire.MESSAGES
    thinking, text, call = resp.message.parts
    assert isinstance(thinking, Reasoning) and thinking.signature
    assert text == Text("Here they are.")
    assert call == ToolCall("toolu_01C", "Bash", '{"command":"ls"}')
    assert resp.stop_reason is StopReason.TOOL_CALLS
    assert resp.usage == Usage(input=12 + 300 + 4000, output=90, cached_input=4000, cache_write=300)


def test_usage_encodes_back_to_uncached_input_tokens() -> None:
    resp = decode_response(copy.deepcopy(RESPONSE_BODY))
    resp.usage = Usage(input=1000, output=5, cached_input=600, cache_write=100, reasoning=3)
    usage = encode_response(resp, None)["usage"]
    assert usage["input_tokens"] == 300
    assert usage["cache_read_input_tokens"] == 600
    assert usage["cache_creation_input_tokens"] == 100
    assert usage["output_tokens_details"] == {"thinking_tokens": 3}
    assert usage["service_tier"] == "standard"


def test_thinking_tokens_are_reasoning() -> None:
    body = copy.deepcopy(RESPONSE_BODY)
    body["usage"]["output_tokens_details"] = {"thinking_tokens": 40}
    assert decode_response(body).usage.reasoning == 40


@pytest.mark.parametrize(
    ("raw", "stop"),
    [
        ("end_turn", StopReason.END),
        ("max_tokens", StopReason.LENGTH),
        ("stop_sequence", StopReason.STOP_SEQUENCE),
        ("tool_use", StopReason.TOOL_CALLS),
        ("pause_turn", StopReason.PAUSE),
        ("refusal", StopReason.REFUSAL),
        ("model_context_window_exceeded", StopReason.LENGTH),
        ("a_future_reason", StopReason.END),
        (None, None),
    ],
)
def test_stop_reasons(raw: str | None, stop: StopReason | None) -> None:
    body = copy.deepcopy(RESPONSE_BODY) | {"stop_reason": raw}
    resp = decode_response(body)
    assert resp.stop_reason == stop
    assert encode_response(resp, None)["stop_reason"] == raw


def test_a_changed_stop_reason_is_encoded_over_the_raw_one() -> None:
    resp = decode_response(copy.deepcopy(RESPONSE_BODY) | {"stop_reason": "a_future_reason"})
    resp.stop_reason = StopReason.TOOL_CALLS
    assert encode_response(resp, None)["stop_reason"] == "tool_use"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m", "content": [], "usage": {}}, "id"),
        ({"id": "i", "content": [], "usage": {}}, "model"),
        ({"id": "i", "model": "m", "usage": {}}, "content"),
        (
            {"id": "i", "model": "m", "content": [], "usage": {"input_tokens": "1"}},
            "usage.input_tokens",
        ),
        ({"id": "i", "model": "m", "content": [], "usage": {}, "stop_reason": 1}, "stop_reason"),
    ],
)
def test_invalid_bodies_name_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_response(body)
    assert caught.value.param == param


@pytest.mark.parametrize("usage", ["absent", "null"])
def test_a_body_without_usage_has_no_usage_and_re_encodes_as_it_came(usage: str) -> None:
    """A server that sends no usage (the API always does): unknown, never zeros."""
    body = {k: v for k, v in copy.deepcopy(RESPONSE_BODY).items() if k != "usage"}
    if usage == "null":
        body["usage"] = None
    resp = decode_response(copy.deepcopy(body))
    assert resp.usage is None
    assert encode_response(resp, None) == body


def _foreign(*parts: Any, **fields: Any) -> Response:
    fields.setdefault(
        "usage", Usage(input=100, output=20, cached_input=30, cache_write=0, reasoning=7)
    )
    return Response("chatcmpl-9", "gpt-x", Message("assistant", list(parts)), Wire.CHAT, **fields)


def test_a_response_from_another_wire_is_a_valid_message() -> None:
    resp = _foreign(
        Reasoning("thought about it"),
        Reasoning("signed", signature="enc"),
        Reasoning(),
        Text("Paris is sunny."),
        ToolCall("call_1", "get_weather", '{"city":"Paris"}'),
        ToolCall("call_2", "apply_patch", "*** Begin", kind="custom"),
        stop_reason=StopReason.TOOL_CALLS,
        extra={"system_fingerprint": "fp"},
    )
    body = encode_response(resp, None)
    anthropic.types.Message.model_validate(body)
    assert body == {
        "id": "chatcmpl-9",
        "type": "message",
        "role": "assistant",
        "model": "gpt-x",
        "content": [
            {"type": "thinking", "thinking": "thought about it", "signature": ""},
            {"type": "thinking", "thinking": "signed", "signature": "enc"},
            {"type": "text", "text": "Paris is sunny."},
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
            {
                "type": "tool_use",
                "id": "call_2",
                "name": "apply_patch",
                "input": {"input": "*** Begin"},
            },
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 70,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 30,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"thinking_tokens": 7},
        },
    }


@pytest.mark.parametrize(
    ("stop", "sent"),
    [(None, "end_turn"), (StopReason.ERROR, "end_turn"), (StopReason.REFUSAL, "refusal")],
)
def test_foreign_stop_reasons(stop: Any, sent: str) -> None:
    assert encode_response(_foreign(Text("x"), stop_reason=stop), None)["stop_reason"] == sent


def test_the_requests_model_stands_in_for_a_missing_one() -> None:
    resp = _foreign(Text("x"))
    resp.model = ""
    request = Request("claude-sonnet-4-5", [], Wire.MESSAGES)
    assert encode_response(resp, request)["model"] == "claude-sonnet-4-5"


@pytest.mark.parametrize(
    "part",
    [Image(url="https://x/y.png"), Opaque(Wire.RESPONSES, {"type": "web_search_call", "id": "w"})],
)
def test_what_a_reply_cannot_carry_is_refused(part: Any) -> None:
    with pytest.raises(ProtocolError):
        encode_response(_foreign(part), None)
