"""Error bodies: ``{"type": "error", "error": {"type": ..., "message": ...}}``.

This wire's error type names are the canonical kinds themselves
(https://docs.anthropic.com/en/api/errors); types it has beyond them (``billing_error``,
``timeout_error`` ...) are read by their HTTP status.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Failure, Json
from skillstate.protocols import ERROR_KINDS, kind_for_status

#: The HTTP status this wire answers each kind with (``overloaded_error`` is its own 529).
STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def error_body(status: int, kind: str, message: str) -> Json:
    name = kind if kind in ERROR_KINDS else kind_for_status(status)
    return {"type": "error", "error": {"type": name, "message": message}}


def decode_error(status: int, body: Json | None) -> tuple[str, str]:
    """(canonical kind, message) of an upstream error body; junk falls back to the kind the
    status implies and a generic message."""
    error = body.get("error") if isinstance(body, dict) else None
    return _read(error, kind_for_status(status), f"upstream error (HTTP {status})")


def failure(data: Any) -> Failure:
    """The canonical event for a mid-stream ``error`` event."""
    error = data.get("error") if isinstance(data, dict) else None
    kind, message = _read(error, "api_error", "upstream stream error")
    return Failure(message, kind, STATUS[kind])


def _read(error: Any, kind: str, message: str) -> tuple[str, str]:
    if not isinstance(error, dict):
        return kind, message
    name, text = error.get("type"), error.get("message")
    return (
        name if name in ERROR_KINDS else kind,
        text if isinstance(text, str) and text else message,
    )
