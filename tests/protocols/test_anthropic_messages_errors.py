"""Error bodies in this wire's shape, and upstream error bodies read back into canonical kinds."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import ErrorResponse

from skillstate.conversation import ErrorKind
from skillstate.protocols import ERROR_KINDS
from skillstate.protocols.anthropic_messages import decode_error, error_body
from skillstate.protocols.anthropic_messages.errors import STATUS

#: What this wire calls each kind (https://docs.anthropic.com/en/api/errors).
TYPES = {
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


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_every_canonical_kind_has_this_wires_name(kind: ErrorKind) -> None:
    body = error_body(STATUS[kind], kind, "it broke")
    assert body == {"type": "error", "error": {"type": TYPES[kind], "message": "it broke"}}
    read = ErrorKind.NOT_FOUND if kind is ErrorKind.NO_ROUTE else kind
    assert decode_error(STATUS[kind], body) == (read, "it broke")
    if kind is not ErrorKind.TOO_LARGE:  # documented for HTTP 413, absent from the SDK's union
        ErrorResponse.model_validate(body)


@pytest.mark.parametrize(
    ("status", "name"), [(429, "rate_limit_error"), (529, "overloaded_error"), (502, "api_error")]
)
def test_an_unknown_kind_is_named_by_its_status(status: int, name: str) -> None:
    teapot: Any = "teapot_error"
    assert error_body(status, teapot, "x")["error"]["type"] == name


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            402,
            {"type": "error", "error": {"type": "billing_error", "message": "pay"}},
            (ErrorKind.INVALID_REQUEST, "pay"),
        ),
        (
            504,
            {"type": "error", "error": {"type": "timeout_error", "message": "slow"}},
            (ErrorKind.TIMEOUT, "slow"),
        ),
        (
            500,
            {"type": "error", "error": {"type": "timeout_error", "message": "slow"}},
            (ErrorKind.TIMEOUT, "slow"),
        ),
        (529, None, (ErrorKind.OVERLOADED, "upstream error (HTTP 529)")),
        (500, {"error": "flat string"}, (ErrorKind.UPSTREAM, "upstream error (HTTP 500)")),
        (
            401,
            {"error": {"type": 5, "message": ""}},
            (ErrorKind.AUTHENTICATION, "upstream error (HTTP 401)"),
        ),
        (404, ["not", "an", "object"], (ErrorKind.NOT_FOUND, "upstream error (HTTP 404)")),
    ],
)
def test_upstream_errors_tolerate_junk(
    status: int, body: Any, expected: tuple[ErrorKind, str]
) -> None:
    assert decode_error(status, body) == expected
