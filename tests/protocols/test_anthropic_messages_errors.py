"""Error bodies in this wire's shape, and upstream error bodies read back into canonical kinds."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import ErrorResponse

from skillstate.protocols import ERROR_KINDS
from skillstate.protocols.anthropic_messages import decode_error, error_body


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_every_canonical_kind_keeps_its_name(kind: str) -> None:
    body = error_body(400, kind, "it broke")
    assert body == {"type": "error", "error": {"type": kind, "message": "it broke"}}
    assert decode_error(400, body) == (kind, "it broke")
    if kind != "request_too_large":  # documented for HTTP 413, absent from the SDK's union
        ErrorResponse.model_validate(body)


@pytest.mark.parametrize(
    ("status", "kind"), [(429, "rate_limit_error"), (529, "overloaded_error"), (502, "api_error")]
)
def test_an_unknown_kind_is_named_by_its_status(status: int, kind: str) -> None:
    assert error_body(status, "teapot_error", "x")["error"]["type"] == kind


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            402,
            {"type": "error", "error": {"type": "billing_error", "message": "pay"}},
            ("invalid_request_error", "pay"),
        ),
        (
            504,
            {"type": "error", "error": {"type": "timeout_error", "message": "slow"}},
            ("api_error", "slow"),
        ),
        (529, None, ("overloaded_error", "upstream error (HTTP 529)")),
        (500, {"error": "flat string"}, ("api_error", "upstream error (HTTP 500)")),
        (
            401,
            {"error": {"type": 5, "message": ""}},
            ("authentication_error", "upstream error (HTTP 401)"),
        ),
        (404, ["not", "an", "object"], ("not_found_error", "upstream error (HTTP 404)")),
    ],
)
def test_upstream_errors_tolerate_junk(status: int, body: Any, expected: tuple[str, str]) -> None:
    assert decode_error(status, body) == expected
