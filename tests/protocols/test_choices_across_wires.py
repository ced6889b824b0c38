"""``n`` and log probabilities across wires: Chat has both, Responses has no ``n``, Anthropic
neither, and no canonical reply carries log probabilities back. What the upstream's wire
cannot do is refused with a 400 naming the parameter, never dropped."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from skillstate.conversation import Json, ProtocolError, Wire
from skillstate.protocols import adapter


def chat(**fields: Any) -> Json:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}


def responses(**fields: Any) -> Json:
    return {"model": "m", "input": "hi", **fields}


def translate(source: Wire, body: Json, target: Wire) -> Json:
    return adapter(target).encode_request(adapter(source).decode_request(body))


def refusal(source: Wire, body: Json, target: Wire) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        translate(source, body, target)
    assert caught.value.status == 400
    return caught.value


@pytest.mark.parametrize("target", [Wire.RESPONSES, Wire.MESSAGES])
def test_several_choices_are_refused_where_the_wire_gives_one(target: Wire) -> None:
    error = refusal(Wire.CHAT, chat(n=3), target)
    assert error.param == "n"
    assert error.message.startswith(f"n=3 asks for several choices, which the {target.value}")


@pytest.mark.parametrize("target", [Wire.RESPONSES, Wire.MESSAGES])
def test_one_choice_is_what_every_wire_gives(target: Wire) -> None:
    sent = translate(Wire.CHAT, chat(n=1, logprobs=False), target)
    assert "n" not in sent and "logprobs" not in sent


@pytest.mark.parametrize("target", [Wire.RESPONSES, Wire.MESSAGES])
@pytest.mark.parametrize("fields", [{"logprobs": True}, {"logprobs": True, "top_logprobs": 5}])
def test_chat_log_probabilities_are_refused_across_wires(
    target: Wire, fields: dict[str, Any]
) -> None:
    error = refusal(Wire.CHAT, chat(**fields), target)
    assert error.param == "logprobs"
    assert error.message.startswith("logprobs cannot be translated")


@pytest.mark.parametrize("target", [Wire.CHAT, Wire.MESSAGES])
@pytest.mark.parametrize(
    "fields",
    [{"include": ["message.output_text.logprobs"]}, {"top_logprobs": 3}],
)
def test_responses_log_probabilities_are_refused_across_wires(
    target: Wire, fields: dict[str, Any]
) -> None:
    error = refusal(Wire.RESPONSES, responses(**fields), target)
    assert error.param == "top_logprobs" and "openai-responses client" in error.message


def test_top_logprobs_zero_asks_for_nothing() -> None:
    """The Responses API echoes ``top_logprobs: 0`` by default; it asks for nothing."""
    sent = translate(Wire.RESPONSES, responses(top_logprobs=0), Wire.CHAT)
    assert "logprobs" not in sent and "top_logprobs" not in sent


def test_the_chat_wire_keeps_its_own_choices_and_log_probabilities() -> None:
    body = chat(n=2, logprobs=True, top_logprobs=4)
    request = adapter(Wire.CHAT).decode_request(copy.deepcopy(body))
    assert (request.params.candidates, request.params.logprobs) == (2, 4)
    assert adapter(Wire.CHAT).encode_request(request) == body


def test_log_probabilities_a_lane_changes_are_written_fresh() -> None:
    request = adapter(Wire.CHAT).decode_request(chat(logprobs=False, top_logprobs=2))
    assert request.params.logprobs is None
    request.params.logprobs = 0
    sent = adapter(Wire.CHAT).encode_request(request)
    assert (sent["logprobs"], "top_logprobs" in sent) == (True, False)
    request = adapter(Wire.RESPONSES).decode_request(
        responses(include=["reasoning.encrypted_content", "message.output_text.logprobs"])
    )
    assert request.params.logprobs == 0
    request.params.logprobs = None
    assert adapter(Wire.RESPONSES).encode_request(request)["include"] == [
        "reasoning.encrypted_content"
    ]
