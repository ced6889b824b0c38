"""Error bodies as each provider sends them.

OpenAI (Chat and Responses) answers ``{"error": {"message", "type", "param", "code"}}``; its
``type`` is coarser than our kinds (a bad key is an ``invalid_request_error`` with code
``invalid_api_key``, a rate limit is type ``requests``), so each kind maps to the pair OpenAI
uses. Anthropic answers ``{"type": "error", "error": {"type": kind, "message"}, "request_id"}``
with our kinds as its own words.
"""

from __future__ import annotations

from skillstate.conversation import Json
from skillstate.testing.outcome import make_id

#: kind -> (OpenAI error type, OpenAI error code)
_OPENAI: dict[str, tuple[str, str | None]] = {
    "invalid_request_error": ("invalid_request_error", None),
    "authentication_error": ("invalid_request_error", "invalid_api_key"),
    "permission_error": ("invalid_request_error", "unsupported_country_region_territory"),
    "not_found_error": ("invalid_request_error", "model_not_found"),
    "request_too_large": ("invalid_request_error", "context_length_exceeded"),
    "rate_limit_error": ("requests", "rate_limit_exceeded"),
    "api_error": ("server_error", None),
    "overloaded_error": ("server_error", "server_is_overloaded"),
}


def openai_error_object(kind: str, message: str) -> Json:
    """The inner ``error`` object of an OpenAI error (also what a Chat stream sends)."""
    error_type, code = _OPENAI.get(kind, ("server_error", None))
    return {"message": message, "type": error_type, "param": None, "code": code}


def openai_error(kind: str, message: str) -> Json:
    return {"error": openai_error_object(kind, message)}


def openai_code(kind: str) -> str:
    """The ``code`` a Responses stream ``error`` event carries for ``kind``."""
    error_type, code = _OPENAI.get(kind, ("server_error", None))
    return code or error_type


def anthropic_error(kind: str, message: str, seed: str = "") -> Json:
    return {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": make_id("req_011", "request:" + seed, 24, base62=True),
    }
