"""The Responses wire's error bodies are OpenAI's one shape (tests/protocols/test_openai_errors.py
tests the mapping); its stream's ``error`` event carries a code and no type, and every kind is
read back from that code alone."""

from __future__ import annotations

import pytest
from openai.types.responses import ResponseErrorEvent

from skillstate.conversation import Wire
from skillstate.protocols import ERROR_KINDS, adapter, openai_errors
from skillstate.protocols.openai_responses import decode_error, error_body
from skillstate.protocols.openai_responses.errors import STATUS, event_code, kind_of


def test_the_wire_speaks_the_shared_shape() -> None:
    assert error_body is openai_errors.error_body
    assert decode_error is openai_errors.decode_error
    assert (kind_of, STATUS) == (openai_errors.kind_of, openai_errors.STATUS)
    responses = adapter(Wire.RESPONSES)
    assert responses.error_body is error_body and responses.decode_error is decode_error


def test_stream_error_codes() -> None:
    """OpenAI's code where the kind has one, else its type (Responses streams send
    ``server_error`` as a code)."""
    assert event_code("rate_limit_error") == "rate_limit_exceeded"
    assert event_code("overloaded_error") == "server_is_overloaded"
    assert event_code("api_error") == "server_error"
    assert event_code("permission_error") == "request_forbidden"
    assert event_code("teapot") == "server_error"


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_every_kind_round_trips_through_an_error_event(kind: str) -> None:
    event = {
        "type": "error",
        "code": event_code(kind),
        "message": "m",
        "param": None,
        "sequence_number": 3,
    }
    ResponseErrorEvent.model_validate(event)
    assert kind_of(event["code"], event["type"], 500) == kind
