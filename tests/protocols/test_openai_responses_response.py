"""Responses response bodies: the identity law, usage and stop reasons, and bodies built from
another wire's response, validated by the openai SDK's ``Response`` model."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from openai.types.responses import Response as SdkResponse
from openai_responses_shapes import fixture, response_body

from skillstate.conversation import (
    Message,
    Opaque,
    Params,
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
from skillstate.protocols.openai_responses import decode_request, decode_response, encode_response


@settings(max_examples=200, deadline=None)
@given(response_body)
def test_identity_on_generated_bodies(body: dict[str, Any]) -> None:
    original = copy.deepcopy(body)
    assert encode_response(decode_response(body), None) == original


def test_identity_on_a_realistic_body() -> None:
    body = fixture("response.json")
    SdkResponse.model_validate(body)
    assert encode_response(decode_response(body), None) == body


def test_decoding_a_body() -> None:
    resp = decode_response(fixture("response.json"))
    assert (resp.id, resp.model, resp.created) == (
        "resp_68af3c2e1d8c8190a1b2c3d4e5f60718",
        "gpt-5.1-codex-2026-11-13",
        1767225600,
    )
    assert resp.usage == Usage(input=5120, output=310, cached_input=4096, reasoning=192)
    assert resp.stop_reason is StopReason.TOOL_CALLS
    reasoning, text, call, patch = resp.message.parts
    assert isinstance(reasoning, Reasoning) and reasoning.signature == "gAAAAABpXv1cBlob=="
    assert isinstance(text, Text) and text.text == "Running the tests now."
    assert text.hints["item"]["phase"] == "commentary"
    assert isinstance(call, ToolCall)
    assert (call.id, call.name, call.kind) == ("call_R1", "exec_command", "function")
    assert isinstance(patch, ToolCall) and patch.kind == "custom"
    assert resp.extra["reasoning"] == {"effort": "high", "summary": "detailed"}


@pytest.mark.parametrize(
    ("status", "details", "output", "reason"),
    [
        ("completed", None, [], StopReason.END),
        (
            "completed",
            None,
            [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}],
            StopReason.TOOL_CALLS,
        ),
        ("incomplete", {"reason": "max_output_tokens"}, [], StopReason.LENGTH),
        ("incomplete", {"reason": "content_filter"}, [], StopReason.REFUSAL),
        ("failed", None, [], StopReason.ERROR),
        ("in_progress", None, [], None),
    ],
)
def test_stop_reasons(status: str, details: Any, output: list[Any], reason: str | None) -> None:
    body = {
        "id": "r",
        "model": "m",
        "status": status,
        "incomplete_details": details,
        "output": output,
    }
    assert decode_response(body).stop_reason == reason


def test_a_changed_stop_reason_or_usage_is_written_anew() -> None:
    resp = decode_response(fixture("response.json"))
    resp.stop_reason = StopReason.LENGTH
    resp.usage = resp.usage + Usage(input=10, output=5)
    body = encode_response(resp, None)
    assert (body["status"], body["incomplete_details"]) == (
        "incomplete",
        {"reason": "max_output_tokens"},
    )
    assert body["usage"] == {
        "input_tokens": 5130,
        "input_tokens_details": {"cached_tokens": 4096, "cache_write_tokens": 0},
        "output_tokens": 315,
        "output_tokens_details": {"reasoning_tokens": 192},
        "total_tokens": 5445,
    }


def client_request() -> Request:
    return decode_request(fixture("codex_turn.json"))


def foreign_response(stop: Any = StopReason.TOOL_CALLS) -> Response:
    parts = [
        Reasoning("I should patch it.", signature="EqQBCkYIBxgCKkA"),
        Text("Patching "),
        Text("now."),
        ToolCall("toolu_1", "exec_command", '{"cmd":"ls"}'),
        ToolCall("toolu_2", "apply_patch", '{"input":"*** Begin Patch\\n*** End Patch\\n"}'),
    ]
    return Response(
        id="msg_01XFDUDYJgAACzvnptvVoYEL",
        model="claude-sonnet-4-5",
        message=Message("assistant", parts),
        source=Wire.MESSAGES,
        stop_reason=stop,
        usage=Usage(input=100, output=20, cached_input=60, cache_write=30),
        extra={"container": None},
    )


def test_a_foreign_response_is_a_valid_responses_body() -> None:
    request = client_request()
    body = encode_response(foreign_response(), request)
    sdk = SdkResponse.model_validate(body)
    assert sdk.output_text == "Patching now."
    assert body["id"] == "msg_01XFDUDYJgAACzvnptvVoYEL" and body["object"] == "response"
    assert body["created_at"] == 0 and body["status"] == "completed"
    assert "container" not in body
    reasoning, message, call, patch = body["output"]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"] == "EqQBCkYIBxgCKkA"
    assert reasoning["summary"] == [{"type": "summary_text", "text": "I should patch it."}]
    assert [c["text"] for c in message["content"]] == ["Patching ", "now."]
    assert call["type"] == "function_call" and call["call_id"] == "toolu_1"
    assert patch == {
        "id": patch["id"],
        "type": "custom_tool_call",
        "call_id": "toolu_2",
        "name": "apply_patch",
        "input": "*** Begin Patch\n*** End Patch\n",
    }
    assert len({item["id"] for item in body["output"]}) == 4
    assert body["usage"]["input_tokens_details"] == {"cached_tokens": 60, "cache_write_tokens": 30}


def test_a_foreign_response_echoes_the_clients_request() -> None:
    request = client_request()
    body = encode_response(foreign_response(), request)
    raw = fixture("codex_turn.json")
    for key in (
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "store",
        "text",
        "prompt_cache_key",
    ):
        assert body[key] == raw[key], key
    assert body["instructions"] is None and body["temperature"] is None
    bare = encode_response(foreign_response(), None)
    assert (bare["tools"], bare["tool_choice"], bare["parallel_tool_calls"]) == ([], "auto", True)
    SdkResponse.model_validate(bare)


def test_foreign_ids_are_deterministic() -> None:
    first = encode_response(foreign_response(), None)["output"]
    assert first == encode_response(foreign_response(), None)["output"]
    other = foreign_response()
    other.id = "msg_other"
    assert [i["id"] for i in encode_response(other, None)["output"]] != [i["id"] for i in first]


@pytest.mark.parametrize(
    ("stop", "status", "details"),
    [
        (StopReason.END, "completed", None),
        (StopReason.STOP_SEQUENCE, "completed", None),
        (StopReason.LENGTH, "incomplete", {"reason": "max_output_tokens"}),
        (StopReason.REFUSAL, "incomplete", {"reason": "content_filter"}),
        (StopReason.ERROR, "failed", None),
    ],
)
def test_foreign_stop_reasons(stop: Any, status: str, details: Any) -> None:
    body = encode_response(foreign_response(stop), None)
    assert (body["status"], body["incomplete_details"]) == (status, details)
    assert (body["error"] is not None) == (status == "failed")
    SdkResponse.model_validate(body)


def test_an_own_response_echoes_the_clients_request_over_the_upstreams() -> None:
    resp = decode_response(fixture("response.json"))
    request = decode_request({"model": "m", "input": "x", "tools": [], "temperature": 0.3})
    body = encode_response(resp, request)
    assert body["temperature"] == 0.3 and body["top_p"] is None
    assert "store" not in body and "reasoning" not in body
    assert body["output"] == fixture("response.json")["output"]


def test_reasoning_without_text_or_signature_is_left_out() -> None:
    resp = foreign_response()
    resp.message.parts.insert(0, Reasoning(""))
    assert len(encode_response(resp, None)["output"]) == 4


def test_another_wires_opaque_part_is_refused() -> None:
    resp = foreign_response()
    resp.message.parts.append(Opaque(Wire.MESSAGES, {"type": "server_tool_use"}))
    with pytest.raises(ProtocolError):
        encode_response(resp, None)


@pytest.mark.parametrize(
    "body", [[], {"model": "m", "output": []}, {"id": "r", "model": "m"}, {"id": "r", "output": 3}]
)
def test_malformed_upstream_bodies_are_a_bad_gateway(body: Any) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_response(body)
    assert caught.value.status == 502


def test_echo_falls_back_to_defaults_when_the_request_cannot_be_written() -> None:
    request = Request("m", [], Wire.CHAT, params=Params(stop=["x"], temperature=0.1))
    body = encode_response(foreign_response(), request)
    assert (body["tools"], body["tool_choice"], body["temperature"]) == ([], "auto", None)
