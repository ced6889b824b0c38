"""The reply model and its deterministic resolution (ids, pieces, token estimates)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from skillstate.conversation import Wire
from skillstate.support import jsonio
from skillstate.testing import RecordedRequest, Reply, ScriptedCall, estimate_tokens, prompt_tokens
from skillstate.testing.outcome import json_pieces, resolve, text_pieces


def _request(wire: Wire, body: dict[str, object], index: int = 0) -> RecordedRequest:
    return RecordedRequest(
        index=index,
        method="POST",
        path="/v1/x",
        query={},
        headers=CIMultiDictProxy(CIMultiDict()),
        body=b"",
        json=body,
        wire=wire,
    )


@given(st.text())
def test_text_pieces_rebuild_the_text_exactly(text: str) -> None:
    assert "".join(text_pieces(text)) == text


@given(st.text())
def test_json_pieces_rebuild_the_arguments_exactly(arguments: str) -> None:
    assert "".join(json_pieces(arguments)) == arguments


def test_text_is_split_by_words() -> None:
    assert text_pieces("  lead and trail  ") == ["  lead ", "and ", "trail  "]


def test_estimate_counts_utf8_bytes_by_four() -> None:
    assert [estimate_tokens(t) for t in ("", "a", "abcd", "abcde", "é" * 2)] == [0, 1, 1, 2, 1]


def test_prompt_tokens_count_only_the_prompt_fields() -> None:
    small = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    big = {**small, "model": "a-much-longer-model-name", "max_tokens": 99999, "stream": True}
    assert prompt_tokens(Wire.MESSAGES, small) == prompt_tokens(Wire.MESSAGES, big)
    assert prompt_tokens(Wire.MESSAGES, {**small, "system": "long " * 40}) > prompt_tokens(
        Wire.MESSAGES, small
    )


def test_stop_reason_is_derived_unless_given() -> None:
    assert Reply("x").stop_reason == "end_turn"
    assert Reply(calls=[ScriptedCall("f")]).stop_reason == "tool_use"
    assert Reply("x", stop="max_tokens").stop_reason == "max_tokens"


def test_failure_kind_defaults_from_status_and_is_checked() -> None:
    kinds = [Reply.failure(status, "m").error for status in (400, 401, 404, 429, 500, 529)]
    assert [error.kind for error in kinds if error] == [
        "invalid_request_error",
        "authentication_error",
        "not_found_error",
        "rate_limit_error",
        "api_error",
        "overloaded_error",
    ]
    assert Reply.failure(500, "m", "overloaded_error").error is not None
    with pytest.raises(ValueError, match="unknown error kind"):
        Reply.failure(500, "m", "server_exploded")


def test_failure_sends_text_only_mid_stream() -> None:
    assert Reply.failure(500, "m").text == ""
    assert Reply.failure(500, "m", mid_stream=True, text="so far").text == "so far"


def test_ids_follow_each_wire_and_are_deterministic() -> None:
    reply = Reply(calls=[ScriptedCall("f"), ScriptedCall("g")])
    chat = resolve(reply, _request(Wire.CHAT, {"model": "m"}))
    messages = resolve(reply, _request(Wire.MESSAGES, {"model": "m"}))
    responses = resolve(reply, _request(Wire.RESPONSES, {"model": "m"}))
    assert chat.id.startswith("chatcmpl-")
    assert all(call.id.startswith("call_") for call in chat.calls)
    assert all(call.id.startswith("toolu_01") for call in messages.calls)
    assert all(call.item_id.startswith("fc_") for call in responses.calls)
    assert len({call.id for call in chat.calls}) == 2
    again = resolve(reply, _request(Wire.CHAT, {"model": "m"}))
    later = resolve(reply, _request(Wire.CHAT, {"model": "m"}, index=1))
    assert again.calls == chat.calls
    assert later.calls[0].id != chat.calls[0].id


def test_usage_estimates_output_and_keeps_overrides() -> None:
    request = _request(Wire.CHAT, {"model": "m", "messages": []})
    estimated = resolve(Reply("abcdefgh", reasoning="abcd"), request).usage
    assert (estimated.output, estimated.reasoning) == (3, 1)
    assert estimated.input == prompt_tokens(Wire.CHAT, {"messages": []})
    fixed = resolve(Reply("x", input_tokens=7, output_tokens=2, cached_tokens=4), request).usage
    assert (fixed.input, fixed.output, fixed.cached_input) == (7, 2, 4)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("wire", list(Wire))
def test_a_reply_without_usage_reports_none_anywhere(wire: Wire, stream: bool) -> None:
    """``Reply(usage=False)`` plays a server that never sends its usage (llama.cpp's
    streams): no usage object, not even a Chat usage chunk a request asked for."""
    from skillstate.testing import chat_bodies, messages_bodies, responses_bodies

    body: dict[str, object] = {"model": "m", "stream": stream}
    if wire is Wire.CHAT:
        body["stream_options"] = {"include_usage": True}
    speakers = {
        Wire.CHAT: (chat_bodies.completion, chat_bodies.stream),
        Wire.RESPONSES: (responses_bodies.response, responses_bodies.stream),
        Wire.MESSAGES: (messages_bodies.message, messages_bodies.stream),
    }
    whole, streamed = speakers[wire]
    sent = {
        reported: resolve(Reply("hello there", usage=reported), _request(wire, body))
        for reported in (True, False)
    }
    if stream:
        with_usage, without = (b"".join(streamed(sent[flag])) for flag in (True, False))
    else:
        with_usage, without = (jsonio.dumps(whole(sent[flag])) for flag in (True, False))
    for counted in (b'"input_tokens"', b'"prompt_tokens"'):
        assert counted not in without
    assert b'"input_tokens"' in with_usage or b'"prompt_tokens"' in with_usage
    assert b"hello" in without
