"""The Responses wire's error bodies are OpenAI's one shape (tests/protocols/test_openai_errors.py
tests the mapping); its stream's ``error`` event carries a code and no type, and every kind is
read back from that code alone."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.responses import ResponseErrorEvent

from skillstate.conversation import ErrorKind, Wire
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
    assert event_code(ErrorKind.RATE_LIMIT) == "rate_limit_exceeded"
    assert event_code(ErrorKind.OVERLOADED) == "server_is_overloaded"
    assert event_code(ErrorKind.UPSTREAM) == "server_error"
    assert event_code(ErrorKind.PERMISSION) == "request_forbidden"
    assert event_code(ErrorKind.NO_ROUTE) == "unknown_url"
    teapot: Any = "teapot"
    assert event_code(teapot) == "server_error"


#: Every kind but a timeout, which only its status (504) tells on OpenAI's wires.
STREAM_KINDS = [kind for kind in ERROR_KINDS if kind is not ErrorKind.TIMEOUT]


@pytest.mark.parametrize("kind", STREAM_KINDS)
def test_every_kind_round_trips_through_an_error_event(kind: ErrorKind) -> None:
    event = {
        "type": "error",
        "code": event_code(kind),
        "message": "m",
        "param": None,
        "sequence_number": 3,
    }
    ResponseErrorEvent.model_validate(event)
    assert kind_of(event["code"], event["type"], 500) == kind
