"""OpenAI error bodies: ``{"error": {"message", "type", "param", "code"}}`` (the Chat and
Responses APIs share the shape), and the ``error`` event of a Responses stream
(``{"type": "error", "code", "message", "param", "sequence_number"}``).

OpenAI's ``type`` is coarser than the canonical kinds (a bad key is an ``invalid_request_error``
with code ``invalid_api_key``; a rate limit has type ``requests``), so each kind maps to the
(type, code) pair OpenAI sends, and reading goes code first, then type, then HTTP status.
"""

from __future__ import annotations

from skillstate.conversation import Json
from skillstate.protocols import kind_for_status

#: canonical kind -> (OpenAI error type, OpenAI error code)
_PAIRS: dict[str, tuple[str, str | None]] = {
    "invalid_request_error": ("invalid_request_error", None),
    "authentication_error": ("invalid_request_error", "invalid_api_key"),
    "permission_error": ("invalid_request_error", "unsupported_country_region_territory"),
    "not_found_error": ("invalid_request_error", "model_not_found"),
    "request_too_large": ("invalid_request_error", "context_length_exceeded"),
    "rate_limit_error": ("requests", "rate_limit_exceeded"),
    "api_error": ("server_error", None),
    "overloaded_error": ("server_error", "server_is_overloaded"),
}
_BY_CODE: dict[str, str] = {code: kind for kind, (_, code) in _PAIRS.items() if code}
_BY_CODE.update(
    insufficient_quota="rate_limit_error",
    rate_limit_error="rate_limit_error",
    server_error="api_error",
    invalid_prompt="invalid_request_error",
)
_BY_TYPE: dict[str, str] = {
    "requests": "rate_limit_error",
    "tokens": "rate_limit_error",
    "insufficient_quota": "rate_limit_error",
    "server_error": "api_error",
    "authentication_error": "authentication_error",
    "permission_error": "permission_error",
    "not_found_error": "not_found_error",
    "rate_limit_error": "rate_limit_error",
    "overloaded_error": "overloaded_error",
    "api_error": "api_error",
}
#: canonical kind -> the HTTP status it stands for (a stream error event carries none).
STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 503,
}


def error_object(kind: str, message: str, param: str | None = None) -> Json:
    error_type, code = _PAIRS.get(kind, _PAIRS["api_error"])
    return {"message": message, "type": error_type, "param": param, "code": code}


def error_body(status: int, kind: str, message: str) -> Json:
    """This wire's error body for a canonical kind (``status`` picks one when ``kind`` is not
    canonical)."""
    if kind not in _PAIRS:
        kind = kind_for_status(status)
    return {"error": error_object(kind, message)}


def event_code(kind: str) -> str:
    """The ``code`` of a stream ``error`` event for ``kind``: OpenAI's code, else its type."""
    error_type, code = _PAIRS.get(kind, _PAIRS["api_error"])
    return code or error_type


def kind_of(code: object, error_type: object, status: int) -> str:
    if isinstance(code, str) and code in _BY_CODE:
        return _BY_CODE[code]
    if isinstance(error_type, str) and error_type in _BY_TYPE:
        return _BY_TYPE[error_type]
    return kind_for_status(status)


def decode_error(status: int, body: Json | None) -> tuple[str, str]:
    """(canonical kind, message) of an upstream error body; tolerant of any junk."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, str):
        return kind_for_status(status), error
    if not isinstance(error, dict):
        error = body if isinstance(body, dict) else {}
    message = error.get("message")
    if not isinstance(message, str) or not message:
        message = f"The upstream answered HTTP {status}."
    return kind_of(error.get("code"), error.get("type"), status), message
