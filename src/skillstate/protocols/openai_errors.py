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

A route that does not exist (``NO_ROUTE``) is written as OpenAI answers an unknown path: 404,
type ``invalid_request_error``, code ``unknown_url`` (older deployments sent code null with the
message "Invalid URL (POST /v1/...)"), unlike a missing model's ``model_not_found``.

Reading: a status that names a kind (401, 403, 404, 413, 429, 503, 504, 529) decides it, as the
SDK does, so a 403 ``model_not_found`` ("project has no access to the model") stays a permission
error; only a 404's code may say that the route, not the model, is missing. Where the status
names only a class (400, 500, any other 4xx or 5xx, or no status at all mid-stream), the
``code`` and then the ``type`` refine it; both OpenAI's names and Anthropic's error types (which
other OpenAI-compatible servers send as ``type``) are read.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import ErrorKind, Json
from skillstate.protocols import kind_for_status

#: canonical kind -> (OpenAI error type, OpenAI error code)
PAIRS: dict[ErrorKind, tuple[str, str | None]] = {
    ErrorKind.INVALID_REQUEST: ("invalid_request_error", None),
    ErrorKind.AUTHENTICATION: ("invalid_request_error", "invalid_api_key"),
    ErrorKind.PERMISSION: ("request_forbidden", None),
    ErrorKind.NOT_FOUND: ("invalid_request_error", "model_not_found"),
    ErrorKind.NO_ROUTE: ("invalid_request_error", "unknown_url"),
    ErrorKind.TOO_LARGE: ("invalid_request_error", "request_too_large"),
    ErrorKind.RATE_LIMIT: ("requests", "rate_limit_exceeded"),
    ErrorKind.UPSTREAM: ("server_error", None),
    ErrorKind.OVERLOADED: ("server_error", "server_is_overloaded"),
    ErrorKind.TIMEOUT: ("server_error", None),
}

#: canonical kind -> the HTTP status OpenAI answers it with; a stream error carries no status,
#: so this is the one its ``Failure`` gets.
STATUS: dict[ErrorKind, int] = {
    ErrorKind.INVALID_REQUEST: 400,
    ErrorKind.AUTHENTICATION: 401,
    ErrorKind.PERMISSION: 403,
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.NO_ROUTE: 404,
    ErrorKind.TOO_LARGE: 413,
    ErrorKind.RATE_LIMIT: 429,
    ErrorKind.UPSTREAM: 500,
    ErrorKind.OVERLOADED: 503,
    ErrorKind.TIMEOUT: 504,
}

#: an error code or type, as OpenAI or a compatible server sends it -> canonical kind
_NAMES: dict[str, ErrorKind] = {
    "invalid_request_error": ErrorKind.INVALID_REQUEST,
    "invalid_prompt": ErrorKind.INVALID_REQUEST,
    "invalid_api_key": ErrorKind.AUTHENTICATION,
    "authentication_error": ErrorKind.AUTHENTICATION,
    "request_forbidden": ErrorKind.PERMISSION,
    "unsupported_country_region_territory": ErrorKind.PERMISSION,
    "permission_error": ErrorKind.PERMISSION,
    "model_not_found": ErrorKind.NOT_FOUND,
    "not_found_error": ErrorKind.NOT_FOUND,
    "unknown_url": ErrorKind.NO_ROUTE,
    "context_length_exceeded": ErrorKind.TOO_LARGE,
    "request_too_large": ErrorKind.TOO_LARGE,
    "requests": ErrorKind.RATE_LIMIT,
    "tokens": ErrorKind.RATE_LIMIT,
    "rate_limit_exceeded": ErrorKind.RATE_LIMIT,
    "insufficient_quota": ErrorKind.RATE_LIMIT,
    "rate_limit_error": ErrorKind.RATE_LIMIT,
    "server_error": ErrorKind.UPSTREAM,
    "api_error": ErrorKind.UPSTREAM,
    "server_is_overloaded": ErrorKind.OVERLOADED,
    "slow_down": ErrorKind.OVERLOADED,
    "overloaded": ErrorKind.OVERLOADED,
    "overloaded_error": ErrorKind.OVERLOADED,
    "timeout_error": ErrorKind.TIMEOUT,
}


def error_object(kind: ErrorKind, message: str, param: str | None = None) -> Json:
    """The inner ``error`` object for ``kind`` (a kind not canonical: ``UPSTREAM``'s)."""
    error_type, code = PAIRS.get(kind, PAIRS[ErrorKind.UPSTREAM])
    return {"message": message, "type": error_type, "param": param, "code": code}


_CONTEXT_CODE = "context_length_exceeded"
"""OpenAI's code for a prompt over the model's context window, answered with 400; a body over
a size limit (413, 431) is ``request_too_large``, as Anthropic names it."""


def error_body(status: int, kind: ErrorKind, message: str) -> Json:
    """The error body for a canonical ``kind`` (``status`` picks one when it is not). A
    ``TOO_LARGE`` at 400 is a context window's overflow (an upstream's, crossing wires)."""
    if kind not in PAIRS:
        kind = kind_for_status(status)
    error = error_object(kind, message)
    if kind is ErrorKind.TOO_LARGE and status == 400:
        error["code"] = _CONTEXT_CODE
    return {"error": error}


def kind_of(code: object, error_type: object, status: int) -> ErrorKind:
    """The canonical kind of an error: ``status`` where it names one, else the ``code``, then
    the ``type``, then the status's class (see the module docstring)."""
    by_status = kind_for_status(status)
    if by_status is ErrorKind.NOT_FOUND and code == "unknown_url":
        return ErrorKind.NO_ROUTE
    if by_status not in (ErrorKind.INVALID_REQUEST, ErrorKind.UPSTREAM):
        return by_status
    for name in (code, error_type):
        if isinstance(name, str) and name in _NAMES:
            return _NAMES[name]
    return by_status


def decode_error(status: int, body: Json | None) -> tuple[ErrorKind, str]:
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


def stream_error(error: Any) -> tuple[ErrorKind, str, int]:
    """(kind, message, status) of an ``error`` object sent mid-stream, where no HTTP status
    tells the kind: its code and type alone decide, ``UPSTREAM`` when they cannot."""
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
