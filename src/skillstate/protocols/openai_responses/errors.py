"""Error bodies of the Responses wire: OpenAI's one error shape, shared with the Chat wire (see
``protocols.openai_errors`` for the mapping), and the stream's own ``error`` event,
``{"type": "error", "code", "message", "param", "sequence_number"}``, which has a ``code`` and
no error type.
"""

from __future__ import annotations

from skillstate.conversation import ErrorKind
from skillstate.protocols.openai_errors import PAIRS, STATUS, decode_error, error_body, kind_of


def event_code(kind: ErrorKind) -> str:
    """The ``code`` of a stream ``error`` event for ``kind``: OpenAI's code, else its type, so
    that ``kind_of`` reads every kind back from the code alone."""
    error_type, code = PAIRS.get(kind, PAIRS[ErrorKind.UPSTREAM])
    return code or error_type


__all__ = ["STATUS", "decode_error", "error_body", "event_code", "kind_of"]
