"""OpenAI's one error shape, ``{"error": {"message", "type", "param", "code"}}``, which the Chat
Completions and Responses APIs share (https://platform.openai.com/docs/guides/error-codes).

Writing: each canonical kind becomes the (type, code) pair OpenAI itself sends for it, and the
HTTP status stays the caller's. The status is what clients act on: the openai SDK picks its
exception class by status alone and only copies ``type`` and ``code`` onto it. OpenAI's
``type`` is coarser than the kinds (a bad key, an unknown model and a too-long input are all
``invalid_request_error``; the ``code`` tells them apart), a rate limit has type ``requests``
(or ``tokens``), and an overload is code ``server_is_overloaded``, which Codex treats as one
only at 503. A permission error keeps OpenAI's 403 type without its one documented code
(``unsupported_country_region_territory``), a cause the gateway never knows.

Reading: a status that names a kind (401, 403, 404, 413, 429, 503, 529) decides it, as the SDK
does, so a 403 ``model_not_found`` ("project has no access to the model") stays a permission
error. Where the status names only a class (400, 500, any other 4xx or 5xx, or no status at all
mid-stream), the ``code`` and then the ``type`` refine it; both OpenAI's names and the
canonical kinds themselves (which other OpenAI-compatible servers send as ``type``) are read.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json
from skillstate.protocols import ERROR_KINDS, kind_for_status

#: canonical kind -> (OpenAI error type, OpenAI error code)
PAIRS: dict[str, tuple[str, str | None]] = {
    "invalid_request_error": ("invalid_request_error", None),
    "authentication_error": ("invalid_request_error", "invalid_api_key"),
    "permission_error": ("request_forbidden", None),
    "not_found_error": ("invalid_request_error", "model_not_found"),
    "request_too_large": ("invalid_request_error", "context_length_exceeded"),
    "rate_limit_error": ("requests", "rate_limit_exceeded"),
    "api_error": ("server_error", None),
    "overloaded_error": ("server_error", "server_is_overloaded"),
}

#: canonical kind -> the HTTP status OpenAI answers it with; a stream error carries no status,
#: so this is the one its ``Failure`` gets.
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

#: an error code or type, as OpenAI or a compatible server sends it -> canonical kind
_NAMES: dict[str, str] = {kind: kind for kind in ERROR_KINDS} | {
    "invalid_api_key": "authentication_error",
    "request_forbidden": "permission_error",
    "unsupported_country_region_territory": "permission_error",
    "model_not_found": "not_found_error",
    "context_length_exceeded": "request_too_large",
    "invalid_prompt": "invalid_request_error",
    "requests": "rate_limit_error",
    "tokens": "rate_limit_error",
    "rate_limit_exceeded": "rate_limit_error",
    "insufficient_quota": "rate_limit_error",
    "server_error": "api_error",
    "server_is_overloaded": "overloaded_error",
    "slow_down": "overloaded_error",
    "overloaded": "overloaded_error",
}


def error_object(kind: str, message: str, param: str | None = None) -> Json:
    """The inner ``error`` object for ``kind`` (a kind not canonical: ``api_error``'s)."""
    error_type, code = PAIRS.get(kind, PAIRS["api_error"])
    return {"message": message, "type": error_type, "param": param, "code": code}


def error_body(status: int, kind: str, message: str) -> Json:
    """The error body for a canonical ``kind`` (``status`` picks one when it is not)."""
    if kind not in PAIRS:
        kind = kind_for_status(status)
    return {"error": error_object(kind, message)}


def kind_of(code: object, error_type: object, status: int) -> str:
    """The canonical kind of an error: ``status`` where it names one, else the ``code``, then
    the ``type``, then the status's class (see the module docstring)."""
    by_status = kind_for_status(status)
    if by_status not in ("invalid_request_error", "api_error"):
        return by_status
    for name in (code, error_type):
        if isinstance(name, str) and name in _NAMES:
            return _NAMES[name]
    return by_status


def decode_error(status: int, body: Json | None) -> tuple[str, str]:
    """(canonical kind, message) of an upstream error body; tolerant of any junk: a body that
    is not OpenAI's shape falls back to the status and a generic message."""
    error: Any = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, str):
        return kind_for_status(status), error
    if not isinstance(error, dict):
        error = body if isinstance(body, dict) else {}
    message = error.get("message")
    if not isinstance(message, str) or not message:
        message = f"upstream error (HTTP {status})"
    return kind_of(error.get("code"), error.get("type"), status), message


def stream_error(error: Any) -> tuple[str, str, int]:
    """(kind, message, status) of an ``error`` object sent mid-stream, where no HTTP status
    tells the kind: its code and type alone decide, ``api_error`` when they cannot."""
    details = error if isinstance(error, dict) else {}
    message = details.get("message") if details else error
    if not isinstance(message, str) or not message:
        message = "upstream error during streaming"
    kind = kind_of(details.get("code"), details.get("type"), 500)
    return kind, message, STATUS[kind]


__all__ = [
    "PAIRS",
    "STATUS",
    "decode_error",
    "error_body",
    "error_object",
    "kind_of",
    "stream_error",
]
