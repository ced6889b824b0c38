"""OpenAI's one error shape, spoken the same way on the Chat and Responses wires: every kind
written as OpenAI writes it and read back, what OpenAI and compatible servers send, what the
openai SDK raises for it, and tolerance of junk."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from skillstate.conversation import ErrorKind, Wire
from skillstate.protocols import ERROR_KINDS, adapter, openai_errors
from skillstate.protocols.openai_errors import (
    STATUS,
    decode_error,
    error_body,
    error_object,
    kind_of,
    stream_error,
)

WIRES = [Wire.CHAT, Wire.RESPONSES]

#: What OpenAI sends for each kind (https://platform.openai.com/docs/guides/error-codes, and
#: the bodies the openai SDK and Codex read): status, type, code.
OPENAI: dict[ErrorKind, tuple[int, str, str | None]] = {
    ErrorKind.INVALID_REQUEST: (400, "invalid_request_error", None),
    ErrorKind.AUTHENTICATION: (401, "invalid_request_error", "invalid_api_key"),
    ErrorKind.PERMISSION: (403, "request_forbidden", None),
    ErrorKind.NOT_FOUND: (404, "invalid_request_error", "model_not_found"),
    ErrorKind.TOO_LARGE: (413, "invalid_request_error", "request_too_large"),
    ErrorKind.RATE_LIMIT: (429, "requests", "rate_limit_exceeded"),
    ErrorKind.UPSTREAM: (500, "server_error", None),
    ErrorKind.OVERLOADED: (503, "server_error", "server_is_overloaded"),
    ErrorKind.NO_ROUTE: (404, "invalid_request_error", "unknown_url"),
    ErrorKind.TIMEOUT: (504, "server_error", None),
}

#: The exception the SDK raises for each kind's status (exactly this class).
SDK_EXCEPTIONS: dict[ErrorKind, type[openai.APIStatusError]] = {
    ErrorKind.INVALID_REQUEST: openai.BadRequestError,
    ErrorKind.AUTHENTICATION: openai.AuthenticationError,
    ErrorKind.PERMISSION: openai.PermissionDeniedError,
    ErrorKind.NOT_FOUND: openai.NotFoundError,
    ErrorKind.TOO_LARGE: openai.APIStatusError,
    ErrorKind.RATE_LIMIT: openai.RateLimitError,
    ErrorKind.UPSTREAM: openai.InternalServerError,
    ErrorKind.OVERLOADED: openai.InternalServerError,
    ErrorKind.NO_ROUTE: openai.NotFoundError,
    ErrorKind.TIMEOUT: openai.InternalServerError,
}


def test_the_mapping_is_openais() -> None:
    assert set(OPENAI) == set(ERROR_KINDS)
    for kind, (status, error_type, code) in OPENAI.items():
        assert STATUS[kind] == status
        assert error_body(status, kind, "m") == {
            "error": {"message": "m", "type": error_type, "param": None, "code": code}
        }


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_every_kind_round_trips_on_both_wires(wire: Wire, kind: ErrorKind) -> None:
    wire_adapter = adapter(wire)
    body = wire_adapter.error_body(STATUS[kind], kind, "went wrong")
    assert body == error_body(STATUS[kind], kind, "went wrong")
    assert wire_adapter.decode_error(STATUS[kind], body) == (kind, "went wrong")


def test_too_large_is_a_size_limit_unless_a_context_overflow() -> None:
    """A body over a size limit (413) is request_too_large; a prompt over the model's window
    (an upstream's 400 context_length_exceeded, crossing wires) keeps its code."""
    assert error_body(413, ErrorKind.TOO_LARGE, "m")["error"]["code"] == "request_too_large"
    assert error_body(431, ErrorKind.TOO_LARGE, "m")["error"]["code"] == "request_too_large"
    context = error_body(400, ErrorKind.TOO_LARGE, "m")["error"]
    assert context["code"] == "context_length_exceeded"
    assert decode_error(400, {"error": context}) == (ErrorKind.TOO_LARGE, "m")


def test_an_unknown_kind_follows_the_status() -> None:
    teapot: Any = "teapot"
    assert error_body(404, teapot, "m")["error"]["code"] == "model_not_found"
    assert error_body(429, teapot, "m")["error"]["type"] == "requests"
    assert error_object(teapot, "m", "model") == {
        "message": "m",
        "type": "server_error",
        "param": "model",
        "code": None,
    }


#: (status, type, code) -> kind: bodies OpenAI sends, then compatible servers that name the
#: error by Anthropic's error type.
SENT: list[tuple[int, str, str | None, ErrorKind]] = [
    (401, "invalid_request_error", "invalid_api_key", ErrorKind.AUTHENTICATION),
    (403, "request_forbidden", "unsupported_country_region_territory", ErrorKind.PERMISSION),
    (403, "invalid_request_error", "model_not_found", ErrorKind.PERMISSION),  # no access
    (404, "invalid_request_error", "model_not_found", ErrorKind.NOT_FOUND),
    (400, "invalid_request_error", "context_length_exceeded", ErrorKind.TOO_LARGE),
    (400, "invalid_request_error", "invalid_prompt", ErrorKind.INVALID_REQUEST),
    (429, "tokens", "rate_limit_exceeded", ErrorKind.RATE_LIMIT),
    (429, "insufficient_quota", "insufficient_quota", ErrorKind.RATE_LIMIT),
    (500, "server_error", None, ErrorKind.UPSTREAM),
    (500, "server_error", "server_is_overloaded", ErrorKind.OVERLOADED),
    (503, "server_error", None, ErrorKind.OVERLOADED),
    (503, "server_error", "slow_down", ErrorKind.OVERLOADED),
    (429, "rate_limit_error", None, ErrorKind.RATE_LIMIT),
    (502, "overloaded_error", None, ErrorKind.OVERLOADED),
    (400, "authentication_error", None, ErrorKind.AUTHENTICATION),
    (404, "invalid_request_error", "unknown_url", ErrorKind.NO_ROUTE),
    (404, "invalid_request_error", None, ErrorKind.NOT_FOUND),  # older: "Invalid URL (...)"
    (504, "timeout_error", None, ErrorKind.TIMEOUT),
]


@pytest.mark.parametrize(("status", "error_type", "code", "kind"), SENT)
def test_what_openai_and_compatible_servers_send(
    status: int, error_type: str, code: str | None, kind: str
) -> None:
    body = {"error": {"message": "why", "type": error_type, "param": None, "code": code}}
    assert decode_error(status, body) == (kind, "why")


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (502, None, (ErrorKind.UPSTREAM, "upstream error (HTTP 502)")),
        (400, {}, (ErrorKind.INVALID_REQUEST, "upstream error (HTTP 400)")),
        (429, {"error": "slow down"}, (ErrorKind.RATE_LIMIT, "slow down")),
        (401, {"error": "nope"}, (ErrorKind.AUTHENTICATION, "nope")),
        (500, {"error": 5}, (ErrorKind.UPSTREAM, "upstream error (HTTP 500)")),
        (500, {"error": []}, (ErrorKind.UPSTREAM, "upstream error (HTTP 500)")),
        (413, {"error": {"message": 5}}, (ErrorKind.TOO_LARGE, "upstream error (HTTP 413)")),
        (403, {"message": "top-level"}, (ErrorKind.PERMISSION, "top-level")),
        (
            400,
            {"message": "bad field", "type": "invalid_request_error"},
            (ErrorKind.INVALID_REQUEST, "bad field"),
        ),
        (
            422,
            {"detail": [{"msg": "field required"}]},
            (ErrorKind.INVALID_REQUEST, "upstream error (HTTP 422)"),
        ),
        (
            401,
            {"error": {"message": None, "type": 3, "code": []}},
            (ErrorKind.AUTHENTICATION, "upstream error (HTTP 401)"),
        ),
        (
            500,
            {"error": {"message": "odd", "type": "teapot", "code": "kettle"}},
            (ErrorKind.UPSTREAM, "odd"),
        ),
    ],
)
def test_junk_falls_back_to_the_status(
    status: int, body: Any, expected: tuple[ErrorKind, str]
) -> None:
    assert decode_error(status, body) == expected


@pytest.mark.parametrize("kind", [k for k in ERROR_KINDS if k is not ErrorKind.TIMEOUT])
def test_a_stream_error_is_read_without_a_status(kind: ErrorKind) -> None:
    assert stream_error(error_object(kind, "mid-stream")) == (kind, "mid-stream", STATUS[kind])
    _, error_type, code = OPENAI[kind]
    assert kind_of(code, error_type, 500) == kind


def test_a_timeout_mid_stream_reads_as_an_upstream_failure() -> None:
    """OpenAI has no code for a timeout: only the status (504) tells it, and a stream error
    has none."""
    error = error_object(ErrorKind.TIMEOUT, "slow")
    assert stream_error(error) == (ErrorKind.UPSTREAM, "slow", 500)
    assert decode_error(504, {"error": error}) == (ErrorKind.TIMEOUT, "slow")


def test_a_missing_route_reads_like_openais_unknown_url() -> None:
    body = error_body(404, ErrorKind.NO_ROUTE, "Unknown request URL: POST /v1/nope.")
    assert body["error"]["type"] == "invalid_request_error"
    assert body["error"]["code"] == "unknown_url"
    assert decode_error(404, body) == (ErrorKind.NO_ROUTE, "Unknown request URL: POST /v1/nope.")
    assert error_body(404, ErrorKind.NOT_FOUND, "m")["error"]["code"] == "model_not_found"


def test_a_junk_stream_error() -> None:
    assert stream_error("boom") == (ErrorKind.UPSTREAM, "boom", 500)
    assert stream_error(None) == (ErrorKind.UPSTREAM, "upstream error during streaming", 500)
    assert stream_error({"message": "", "type": "requests"}) == (
        ErrorKind.RATE_LIMIT,
        "upstream error during streaming",
        429,
    )


async def _raised(wire: Wire, kind: ErrorKind) -> openai.APIStatusError:
    status = STATUS[kind]

    async def refuse(_: web.Request) -> web.Response:
        return web.json_response(
            adapter(wire).error_body(status, kind, "went wrong"), status=status
        )

    app = web.Application()
    app.router.add_post(adapter(wire).path, refuse)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    client = openai.AsyncOpenAI(
        base_url=f"http://127.0.0.1:{server.port}/v1", api_key="sk-test", max_retries=0
    )
    try:
        with pytest.raises(openai.APIStatusError) as caught:
            if wire is Wire.CHAT:
                await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}]
                )
            else:
                await client.responses.create(model="m", input="hi")
    finally:
        await client.close()
        await server.close()
    return caught.value


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("kind", ERROR_KINDS)
async def test_the_sdk_raises_by_the_status_and_keeps_the_body(wire: Wire, kind: ErrorKind) -> None:
    """What a client sees: the SDK's exception for the kind's status, with OpenAI's type and
    code and our message."""
    error = await _raised(wire, kind)
    status, error_type, code = OPENAI[kind]
    assert type(error) is SDK_EXCEPTIONS[kind]
    assert error.status_code == status
    assert (error.type, error.code) == (error_type, code)
    assert error.message == f"Error code: {status} - went wrong"


def test_the_public_surface() -> None:
    assert sorted(openai_errors.__all__) == [
        "PAIRS",
        "STATUS",
        "decode_error",
        "error_body",
        "error_object",
        "kind_of",
        "stream_error",
    ]
