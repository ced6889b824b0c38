"""Error bodies in the OpenAI shape, and reading what OpenAI-compatible upstreams send."""

from __future__ import annotations

from typing import Any

import pytest

from skillstate.protocols import ERROR_KINDS
from skillstate.protocols.openai_chat import decode_error, error_body

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


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_every_kind_survives_a_round_trip(kind: str) -> None:
    body = error_body(STATUS[kind], kind, "why")
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert decode_error(STATUS[kind], body) == (kind, "why")


def test_openai_type_names() -> None:
    types = {kind: error_body(STATUS[kind], kind, "m")["error"]["type"] for kind in ERROR_KINDS}
    assert types == {
        "invalid_request_error": "invalid_request_error",
        "authentication_error": "authentication_error",
        "permission_error": "permission_error",
        "not_found_error": "not_found_error",
        "request_too_large": "invalid_request_error",
        "rate_limit_error": "rate_limit_error",
        "api_error": "server_error",
        "overloaded_error": "server_error",
    }


def test_an_unknown_kind_follows_the_status() -> None:
    assert error_body(429, "teapot", "m")["error"]["type"] == "rate_limit_error"


def _openai(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            401,
            _openai(
                "Incorrect API key provided: sk-test.", "invalid_request_error", "invalid_api_key"
            ),
            ("authentication_error", "Incorrect API key provided: sk-test."),
        ),
        (
            429,
            _openai("You exceeded your current quota", "insufficient_quota", "insufficient_quota"),
            ("rate_limit_error", "You exceeded your current quota"),
        ),
        (
            429,
            _openai("Rate limit reached for gpt-4o", "requests", "rate_limit_exceeded"),
            ("rate_limit_error", "Rate limit reached for gpt-4o"),
        ),
        (
            404,
            _openai("The model `gpt-9` does not exist", "invalid_request_error", "model_not_found"),
            ("not_found_error", "The model `gpt-9` does not exist"),
        ),
        (
            400,
            _openai("maximum context length", "invalid_request_error", "context_length_exceeded"),
            ("invalid_request_error", "maximum context length"),
        ),
        (
            500,
            _openai("The server had an error", "server_error", None),
            ("api_error", "The server had an error"),
        ),
        (503, _openai("Slow down", "server_error", None), ("overloaded_error", "Slow down")),
        (
            403,
            _openai("Country not supported", "", "unsupported_country"),
            ("permission_error", "Country not supported"),
        ),
    ],
)
def test_what_openai_sends(status: int, body: dict[str, Any], expected: tuple[str, str]) -> None:
    assert decode_error(status, body) == expected


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (502, None, ("api_error", "upstream error (HTTP 502)")),
        (400, {}, ("invalid_request_error", "upstream error (HTTP 400)")),
        (429, {"error": "slow down"}, ("rate_limit_error", "slow down")),
        (500, {"error": 5}, ("api_error", "upstream error (HTTP 500)")),
        (
            400,
            {"message": "bad field", "type": "invalid_request_error"},
            ("invalid_request_error", "bad field"),
        ),
        (
            422,
            {"detail": [{"msg": "field required"}]},
            ("invalid_request_error", "upstream error (HTTP 422)"),
        ),
        (
            401,
            {"error": {"message": None, "type": 3, "code": []}},
            ("authentication_error", "upstream error (HTTP 401)"),
        ),
    ],
)
def test_junk_falls_back_to_the_status(status: int, body: Any, expected: tuple[str, str]) -> None:
    assert decode_error(status, body) == expected
