"""What each adapter owns besides bodies, so that code outside ``protocols/`` never names a
wire's id shape or fields: ids of responses the gateway writes itself, and what a request the
gateway reads the reply of must ask its wire for."""

from __future__ import annotations

import pytest

from skillstate.conversation import Message, Params, Request, Text, Wire
from skillstate.protocols import adapter
from skillstate.protocols.anthropic_messages import count_tokens_body
from skillstate.protocols.openai_chat import ask_usage, encode_request
from skillstate.protocols.openai_responses.compaction import compaction_id


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        (Wire.CHAT, "chatcmpl-abc"),
        (Wire.RESPONSES, "resp_abc"),
        (Wire.MESSAGES, "msg_abc"),
    ],
)
def test_response_ids_take_each_wires_shape(wire: Wire, expected: str) -> None:
    assert adapter(wire).response_id("abc") == expected


def test_the_gateways_own_ids_and_bodies_of_other_routes() -> None:
    assert compaction_id("abc") == "cmp_abc"
    assert count_tokens_body(42) == {"input_tokens": 42}


def _chat(stream: bool, **extra: object) -> Request:
    return Request(
        "m",
        [Message("user", [Text("hi")])],
        Wire.CHAT,
        params=Params(stream=stream),
        extra=dict(extra),
    )


def test_a_chat_stream_asks_for_its_usage() -> None:
    request = _chat(True)
    asked = adapter(Wire.CHAT).for_upstream(request)
    assert encode_request(asked)["stream_options"] == {"include_usage": True}
    assert "stream_options" not in request.extra  # the client's request is left as it was


def test_the_clients_other_stream_options_are_kept() -> None:
    asked = ask_usage(_chat(True, stream_options={"include_obfuscation": False}))
    assert asked.extra["stream_options"] == {"include_obfuscation": False, "include_usage": True}


@pytest.mark.parametrize(
    "request_",
    [
        _chat(False),
        _chat(True, stream_options={"include_usage": True}),
        Request("m", [], Wire.MESSAGES, params=Params(stream=True)),
    ],
)
def test_a_request_that_asks_already_or_needs_not_is_left_as_is(request_: Request) -> None:
    assert ask_usage(request_) is request_


@pytest.mark.parametrize("wire", [Wire.RESPONSES, Wire.MESSAGES])
def test_other_wires_send_the_request_as_is(wire: Wire) -> None:
    request = Request("m", [], wire, params=Params(stream=True))
    assert adapter(wire).for_upstream(request) is request


def test_a_chat_stream_from_another_wire_asks_when_encoded() -> None:
    request = Request(
        "m", [Message("user", [Text("hi")])], Wire.MESSAGES, params=Params(stream=True)
    )
    assert encode_request(adapter(Wire.CHAT).for_upstream(request))["stream_options"] == {
        "include_usage": True
    }
