"""Error bodies of the OpenAI wires: ``{"error": {"message", "type", "param", "code"}}``.

OpenAI names most kinds the way ``protocols.ERROR_KINDS`` does; the others are told apart by
``code``: ``request_too_large`` is an ``invalid_request_error`` with that code, an upstream
failure is a ``server_error``, ``overloaded`` its overloaded form. Reading a body goes the other
way and also understands what OpenAI itself sends (``invalid_api_key``, ``insufficient_quota``,
``model_not_found``...); a type it does not know falls back to the HTTP status.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json
from skillstate.protocols import kind_for_status

_TYPES: dict[str, tuple[str, str | None]] = {
    "invalid_request_error": ("invalid_request_error", None),
    "authentication_error": ("authentication_error", "invalid_api_key"),
    "permission_error": ("permission_error", None),
    "not_found_error": ("not_found_error", None),
    "request_too_large": ("invalid_request_error", "request_too_large"),
    "rate_limit_error": ("rate_limit_error", "rate_limit_exceeded"),
    "api_error": ("server_error", None),
    "overloaded_error": ("server_error", "overloaded"),
}
_BY_CODE = {
    "invalid_api_key": "authentication_error",
    "request_too_large": "request_too_large",
    "rate_limit_exceeded": "rate_limit_error",
    "insufficient_quota": "rate_limit_error",
    "model_not_found": "not_found_error",
    "overloaded": "overloaded_error",
}
_BY_TYPE = {
    "authentication_error": "authentication_error",
    "permission_error": "permission_error",
    "not_found_error": "not_found_error",
    "rate_limit_error": "rate_limit_error",
    "insufficient_quota": "rate_limit_error",
    "requests": "rate_limit_error",
    "tokens": "rate_limit_error",
}
_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 503,
}


def error_body(status: int, kind: str, message: str) -> Json:
    """This wire's error JSON for a canonical ``kind`` (an unknown kind: by ``status``)."""
    error_type, code = _TYPES.get(kind) or _TYPES[kind_for_status(status)]
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def decode_error(status: int, body: Json | None) -> tuple[str, str]:
    """(canonical kind, message) of an upstream error body, tolerant of any junk."""
    error: Any = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, str):
        return kind_for_status(status), error
    if not isinstance(error, dict):
        error = body if isinstance(body, dict) else {}
    message = error.get("message")
    if not isinstance(message, str) or not message:
        message = f"upstream error (HTTP {status})"
    return _kind(status, error.get("type"), error.get("code")), message


def _kind(status: int, error_type: Any, code: Any) -> str:
    if isinstance(code, str) and code in _BY_CODE:
        return _BY_CODE[code]
    if isinstance(error_type, str) and error_type in _BY_TYPE:
        return _BY_TYPE[error_type]
    return kind_for_status(status)


def stream_error(error: Any) -> tuple[str, str, int]:
    """(kind, message, status) of an ``{"error": ...}`` event sent mid-stream, where no HTTP
    status tells the kind: the type and code alone decide, ``api_error`` when they cannot."""
    details = error if isinstance(error, dict) else {}
    message = details.get("message") if details else error
    if not isinstance(message, str) or not message:
        message = "upstream error during streaming"
    error_type = details.get("type")
    kind = _kind(500, error_type, details.get("code"))
    if kind == "api_error" and error_type == "invalid_request_error":
        kind = "invalid_request_error"
    return kind, message, _STATUS.get(kind, 500)
