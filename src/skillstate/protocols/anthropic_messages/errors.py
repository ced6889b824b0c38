"""Error bodies: ``{"type": "error", "error": {"type": ..., "message": ...}}``.

Each canonical kind has one of this wire's error types (https://docs.anthropic.com/en/api/errors,
and the SDK's ``ErrorObject`` union); a route that does not exist is ``not_found_error``, as the
API answers an unknown path. Types beyond the table (``billing_error`` ...) are read by their
HTTP status.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import ErrorKind, Failure, Json
from skillstate.protocols import kind_for_status

#: canonical kind -> this wire's error type
TYPES: dict[ErrorKind, str] = {
    ErrorKind.INVALID_REQUEST: "invalid_request_error",
    ErrorKind.AUTHENTICATION: "authentication_error",
    ErrorKind.PERMISSION: "permission_error",
    ErrorKind.NOT_FOUND: "not_found_error",
    ErrorKind.NO_ROUTE: "not_found_error",
    ErrorKind.TOO_LARGE: "request_too_large",
    ErrorKind.RATE_LIMIT: "rate_limit_error",
    ErrorKind.UPSTREAM: "api_error",
    ErrorKind.OVERLOADED: "overloaded_error",
    ErrorKind.TIMEOUT: "timeout_error",
}

#: this wire's error type -> canonical kind (``not_found_error`` reads as ``NOT_FOUND``)
KINDS: dict[str, ErrorKind] = {
    name: kind for kind, name in TYPES.items() if kind is not ErrorKind.NO_ROUTE
}

#: The HTTP status this wire answers each kind with (an overload is its own 529).
STATUS: dict[ErrorKind, int] = {
    ErrorKind.INVALID_REQUEST: 400,
    ErrorKind.AUTHENTICATION: 401,
    ErrorKind.PERMISSION: 403,
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.NO_ROUTE: 404,
    ErrorKind.TOO_LARGE: 413,
    ErrorKind.RATE_LIMIT: 429,
    ErrorKind.UPSTREAM: 500,
    ErrorKind.OVERLOADED: 529,
    ErrorKind.TIMEOUT: 504,
}


def error_body(status: int, kind: ErrorKind, message: str) -> Json:
    name = TYPES.get(kind) or TYPES[kind_for_status(status)]
    return {"type": "error", "error": {"type": name, "message": message}}


def decode_error(status: int, body: Json | None) -> tuple[ErrorKind, str]:
    """(canonical kind, message) of an upstream error body; junk falls back to the kind the
    status implies and a generic message."""
    error = body.get("error") if isinstance(body, dict) else None
    return _read(error, kind_for_status(status), f"upstream error (HTTP {status})")


def failure(data: Any) -> Failure:
    """The canonical event for a mid-stream ``error`` event."""
    error = data.get("error") if isinstance(data, dict) else None
    kind, message = _read(error, ErrorKind.UPSTREAM, "upstream stream error")
    return Failure(message, kind, STATUS[kind])


def _read(error: Any, kind: ErrorKind, message: str) -> tuple[ErrorKind, str]:
    if not isinstance(error, dict):
        return kind, message
    name, text = error.get("type"), error.get("message")
    return (
        KINDS.get(name, kind) if isinstance(name, str) else kind,
        text if isinstance(text, str) and text else message,
    )
