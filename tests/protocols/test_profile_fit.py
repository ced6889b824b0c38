"""What the compatible profile changes on the wire (``protocols.profiles``): the Chat body the
gateway encodes, fitted to what generic servers take, and the 500s that are the request's
fault. Pure: bodies in, bodies out."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from skillstate.conversation import Profile, Wire
from skillstate.protocols.profiles import fit, refused_as_invalid

CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}


def _chat(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": list(messages), **fields}


def _fitted(body: dict[str, Any]) -> dict[str, Any]:
    return fit(body, Profile.COMPATIBLE, Wire.CHAT)


def test_an_assistant_message_has_string_content_beside_its_tool_calls() -> None:
    body = _chat(
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "assistant", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "v1"},
    )
    messages = _fitted(body)["messages"]
    assert messages[1] == {"role": "assistant", "content": "", "tool_calls": [CALL]}
    assert messages[2] == {"role": "assistant", "tool_calls": [CALL], "content": ""}
    assert messages[3] == body["messages"][3]


def test_the_instructions_at_the_head_become_one_system_message() -> None:
    body = _chat(
        {"role": "system", "content": "You are terse."},
        {"role": "developer", "content": [{"type": "text", "text": "Sandbox: read-only."}]},
        {"role": "user", "content": "hi"},
        {"role": "developer", "content": "Now you may write."},
        {"role": "user", "content": "go"},
    )
    messages = _fitted(body)["messages"]
    assert messages == [
        {"role": "system", "content": "You are terse.\n\nSandbox: read-only."},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "Now you may write."},
        {"role": "user", "content": "go"},
    ]


def test_one_developer_message_is_renamed_and_one_with_more_than_text_is_not_joined() -> None:
    alone = _fitted(_chat({"role": "developer", "content": "Be brief."}))
    assert alone["messages"] == [{"role": "system", "content": "Be brief."}]
    named = {"role": "developer", "content": "Be brief.", "name": "codex"}
    kept = _fitted(
        _chat({"role": "system", "content": "S"}, named, {"role": "user", "content": "u"})
    )
    assert kept["messages"] == [
        {"role": "system", "content": "S"},
        {**named, "role": "system"},
        {"role": "user", "content": "u"},
    ]


def test_text_lists_become_strings_except_in_user_messages() -> None:
    parts = [{"type": "text", "text": "v1"}, {"type": "text", "text": "(cached)"}]
    image = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]
    body = _chat(
        {"role": "user", "content": parts},
        {"role": "assistant", "content": parts, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": parts},
        {"role": "user", "content": [*parts, *image]},
        {"role": "tool", "tool_call_id": "call_1", "content": [{**parts[0], "extra": 1}]},
    )
    messages = _fitted(body)["messages"]
    assert messages[0]["content"] == parts
    assert messages[1]["content"] == "v1\n\n(cached)"
    assert messages[2]["content"] == "v1\n\n(cached)"
    assert messages[3]["content"] == [*parts, *image]
    assert messages[4]["content"] == [{**parts[0], "extra": 1}]  # more than text: as it was


@pytest.mark.parametrize(
    ("limits", "sent"),
    [
        ({"max_completion_tokens": 16}, {"max_tokens": 16}),
        ({"max_tokens": 16}, {"max_tokens": 16}),
        ({"max_completion_tokens": 16, "max_tokens": 99}, {"max_tokens": 16}),
        ({"max_completion_tokens": None}, {}),
        ({}, {}),
    ],
)
def test_the_output_limit_goes_as_max_tokens(limits: dict[str, Any], sent: dict[str, Any]) -> None:
    body = _chat({"role": "user", "content": "hi"}, **limits)
    fitted = _fitted(body)
    assert {k: v for k, v in fitted.items() if k.startswith("max_")} == sent


def test_the_body_given_is_left_as_it_was_and_the_rest_is_kept() -> None:
    body = _chat(
        {"role": "developer", "content": "D"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        max_completion_tokens=5,
        stream=True,
        stream_options={"include_usage": True},
        tools=[{"type": "function", "function": {"name": "lookup", "parameters": {}}}],
    )
    before = copy.deepcopy(body)
    fitted = _fitted(body)
    assert body == before
    assert fitted["stream_options"] == {"include_usage": True}
    assert fitted["tools"] == body["tools"] and fitted["stream"] is True


def test_only_a_compatible_chat_upstream_gets_a_fitted_body() -> None:
    body = _chat({"role": "developer", "content": "D"}, max_completion_tokens=5)
    assert fit(body, Profile.OFFICIAL, Wire.CHAT) is body
    for wire in (Wire.RESPONSES, Wire.MESSAGES):
        assert fit(body, Profile.COMPATIBLE, wire) is body


LLAMA_CPP_PYTHON = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, "
    "'typed-dict', 'role'), 'msg': \"Input should be 'system'\", 'input': 'developer'}"
)
"""What llama-cpp-python's server sends for a body its schema refuses: a 500 wrapping the
exception's text (``RouteErrorHandler``)."""


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": LLAMA_CPP_PYTHON, "type": "internal_server_error"}},
        {"error": {"message": "[{'type': 'missing', 'loc': ('body', 'messages', 0)}]"}},
        {"error": {"message": "2 validation errors for CreateChatCompletionRequest"}},
        {"error": {"message": "bad", "type": "invalid_request_error"}},
        {"error": {"message": "bad", "code": "invalid_request_error"}},
        {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}},
        {"detail": [{"loc": ["body", "messages"], "msg": "Field required", "type": "missing"}]},
        {"error": "1 validation error for ChatRequest"},
    ],
)
def test_a_500_that_says_the_request_was_invalid(body: dict[str, Any]) -> None:
    assert refused_as_invalid(500, body)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, {"error": {"message": "CUDA out of memory", "type": "internal_server_error"}}),
        (500, {"error": {"message": "1 validation error for ChatCompletionResponse"}}),
        (500, {"error": {"message": "1 validation error:\n  {'loc': ('response', 'id')}"}}),
        (500, {"detail": [{"loc": ["query", "x"], "msg": "bad"}]}),
        (500, {"detail": "Internal Server Error"}),
        (500, None),
        (502, {"error": {"message": LLAMA_CPP_PYTHON}}),
        (400, {"error": {"message": "bad", "type": "invalid_request_error"}}),
    ],
)
def test_other_refusals_are_left_as_they_are(status: int, body: dict[str, Any] | None) -> None:
    assert not refused_as_invalid(status, body)
