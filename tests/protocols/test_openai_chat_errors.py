"""The Chat wire's error bodies are OpenAI's one shape (tests/protocols/test_openai_errors.py
tests the mapping): its adapter writes and reads them with the shared functions, and its
stream reads an ``error`` chunk by that mapping."""

from __future__ import annotations

import pytest

from skillstate.conversation import ErrorKind, Wire
from skillstate.protocols import ERROR_KINDS, adapter, openai_errors
from skillstate.protocols.openai_chat import decode_error, error_body
from skillstate.protocols.openai_chat.errors import stream_error


def test_the_wire_speaks_the_shared_shape() -> None:
    assert error_body is openai_errors.error_body
    assert decode_error is openai_errors.decode_error
    assert stream_error is openai_errors.stream_error
    chat = adapter(Wire.CHAT)
    assert chat.error_body is error_body and chat.decode_error is decode_error


#: Every kind but a timeout, which only its status (504) tells on OpenAI's wires.
STREAM_KINDS = [kind for kind in ERROR_KINDS if kind is not ErrorKind.TIMEOUT]


@pytest.mark.parametrize("kind", STREAM_KINDS)
def test_an_error_chunk_round_trips(kind: ErrorKind) -> None:
    """A Failure is sent as ``{"error": {...}}`` in the stream, where no status says the kind."""
    status = openai_errors.STATUS[kind]
    chunk = error_body(status, kind, "mid-stream")
    assert stream_error(chunk["error"]) == (kind, "mid-stream", status)
