"""The answer's format across wires: Chat ``response_format``, Responses ``text.format`` and
Anthropic ``output_config.format`` carry one another, and what a wire cannot express is
refused with a 400 naming the client's field, never dropped."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from skillstate.conversation import Json, OutputFormat, ProtocolError, Wire
from skillstate.protocols import adapter

SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}},
    "required": ["title"],
    "additionalProperties": False,
}
CHAT_SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "title", "description": "A title", "schema": SCHEMA, "strict": True},
}
RESPONSES_SCHEMA = {
    "type": "json_schema",
    "name": "title",
    "description": "A title",
    "schema": SCHEMA,
    "strict": True,
}
MESSAGES_SCHEMA = {"type": "json_schema", "schema": SCHEMA}


def chat(**fields: Any) -> Json:
    return {"model": "m", "messages": [{"role": "user", "content": "name it"}], **fields}


def responses(**fields: Any) -> Json:
    return {"model": "m", "input": "name it", **fields}


def messages(**fields: Any) -> Json:
    body = {"model": "m", "max_tokens": 256, "messages": [{"role": "user", "content": "name it"}]}
    return {**body, **fields}


def translate(source: Wire, body: Json, target: Wire) -> Json:
    return adapter(target).encode_request(adapter(source).decode_request(body))


def refusal(source: Wire, body: Json, target: Wire) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        translate(source, body, target)
    assert caught.value.status == 400
    return caught.value


def test_a_chat_schema_becomes_a_responses_text_format() -> None:
    sent = translate(Wire.CHAT, chat(response_format=CHAT_SCHEMA), Wire.RESPONSES)
    assert sent["text"] == {"format": RESPONSES_SCHEMA}


def test_a_responses_text_format_becomes_a_chat_response_format() -> None:
    body = responses(text={"format": RESPONSES_SCHEMA, "verbosity": "low"})
    assert translate(Wire.RESPONSES, body, Wire.CHAT)["response_format"] == CHAT_SCHEMA


@pytest.mark.parametrize(
    ("source", "body"),
    [
        (Wire.CHAT, chat(response_format={"type": "json_object"})),
        (Wire.RESPONSES, responses(text={"format": {"type": "json_object"}})),
    ],
)
def test_json_object_travels_between_the_openai_wires(source: Wire, body: Json) -> None:
    target = Wire.RESPONSES if source is Wire.CHAT else Wire.CHAT
    sent = translate(source, body, target)
    found = sent["response_format"] if target is Wire.CHAT else sent["text"]["format"]
    assert found == {"type": "json_object"}


@pytest.mark.parametrize(
    ("source", "body"),
    [
        (Wire.CHAT, chat(response_format=CHAT_SCHEMA)),
        (Wire.RESPONSES, responses(text={"format": RESPONSES_SCHEMA})),
    ],
)
def test_an_openai_schema_becomes_anthropic_structured_output(source: Wire, body: Json) -> None:
    """``output_config.format`` takes the schema only: the API always enforces it."""
    sent = translate(source, body, Wire.MESSAGES)
    assert sent["output_config"] == {"format": MESSAGES_SCHEMA}
    assert "output_format" not in sent


def test_anthropic_structured_output_reaches_the_openai_wires_named() -> None:
    """Claude Code's title request: a schema beside the effort. The OpenAI wires require a
    name, so the schema is named ``output``."""
    body = messages(output_config={"effort": "high", "format": MESSAGES_SCHEMA})
    chat_body = translate(Wire.MESSAGES, body, Wire.CHAT)
    assert chat_body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": SCHEMA},
    }
    assert chat_body["reasoning_effort"] == "high"
    text = translate(Wire.MESSAGES, body, Wire.RESPONSES)["text"]
    assert text == {"format": {"type": "json_schema", "name": "output", "schema": SCHEMA}}


def test_the_beta_output_format_of_anthropic_is_read_too() -> None:
    body = messages(output_format=MESSAGES_SCHEMA)
    sent = translate(Wire.MESSAGES, body, Wire.CHAT)
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA
    assert (
        adapter(Wire.MESSAGES).encode_request(
            adapter(Wire.MESSAGES).decode_request(copy.deepcopy(body))
        )
        == body
    )


@pytest.mark.parametrize(
    ("source", "body", "field"),
    [
        (Wire.CHAT, chat(response_format={"type": "json_object"}), "response_format"),
        (Wire.RESPONSES, responses(text={"format": {"type": "json_object"}}), "text.format"),
    ],
)
def test_json_object_has_no_anthropic_form(source: Wire, body: Json, field: str) -> None:
    error = refusal(source, body, Wire.MESSAGES)
    assert error.param == field
    assert error.message.startswith(f"{field} of type 'json_object' has no equivalent")
    assert "json_schema" in error.message


def test_a_schema_without_a_schema_has_no_anthropic_form() -> None:
    nameless = {"type": "json_schema", "json_schema": {"name": "x"}}
    error = refusal(Wire.CHAT, chat(response_format=nameless), Wire.MESSAGES)
    assert error.param == "response_format" and "without a schema" in error.message


@pytest.mark.parametrize("target", [Wire.RESPONSES, Wire.MESSAGES])
def test_a_format_type_another_wire_does_not_define_is_refused(target: Wire) -> None:
    body = chat(response_format={"type": "grammar", "grammar": "root ::= 'a'"})
    error = refusal(Wire.CHAT, body, target)
    assert error.param == "response_format" and "'grammar'" in error.message


@pytest.mark.parametrize(
    ("source", "body", "target"),
    [
        (Wire.RESPONSES, responses(text={"format": {"type": "text"}}), Wire.CHAT),
        (Wire.RESPONSES, responses(text={"format": {"type": "text"}}), Wire.MESSAGES),
        (Wire.CHAT, chat(response_format={"type": "text"}), Wire.RESPONSES),
    ],
)
def test_text_the_default_is_not_spelled_out(source: Wire, body: Json, target: Wire) -> None:
    sent = translate(source, body, target)
    assert "response_format" not in sent and "text" not in sent
    assert "format" not in sent.get("output_config", {})


def test_a_format_a_lane_changes_is_written_on_the_clients_own_wire() -> None:
    """Natively the client's objects are re-emitted while they mean the canonical value; a
    changed value replaces them (and keeps their other keys)."""
    request = adapter(Wire.RESPONSES).decode_request(
        responses(text={"format": {"type": "json_object"}, "verbosity": "low"})
    )
    request.params.output_format = OutputFormat("json_schema", schema=SCHEMA, name="t")
    sent = adapter(Wire.RESPONSES).encode_request(request)
    assert sent["text"] == {
        "format": {"type": "json_schema", "name": "t", "schema": SCHEMA},
        "verbosity": "low",
    }
    request = adapter(Wire.CHAT).decode_request(chat(response_format={"type": "json_object"}))
    request.params.output_format = None
    assert "response_format" not in adapter(Wire.CHAT).encode_request(request)
    request = adapter(Wire.MESSAGES).decode_request(messages(output_format=MESSAGES_SCHEMA))
    request.params.output_format = OutputFormat("json_schema", schema={"type": "object"})
    sent = adapter(Wire.MESSAGES).encode_request(request)
    assert "output_format" not in sent
    assert sent["output_config"] == {
        "format": {"type": "json_schema", "schema": {"type": "object"}}
    }
