"""OpenAI's one error shape, spoken the same way on the Chat and Responses wires: every kind
written as OpenAI writes it and read back, what OpenAI and compatible servers send, what the
openai SDK raises for it, and tolerance of junk."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from skillstate.conversation import Wire
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
OPENAI = {
    "invalid_request_error": (400, "invalid_request_error", None),
    "authentication_error": (401, "invalid_request_error", "invalid_api_key"),
    "permission_error": (403, "request_forbidden", None),
    "not_found_error": (404, "invalid_request_error", "model_not_found"),
    "request_too_large": (413, "invalid_request_error", "context_length_exceeded"),
    "rate_limit_error": (429, "requests", "rate_limit_exceeded"),
    "api_error": (500, "server_error", None),
    "overloaded_error": (503, "server_error", "server_is_overloaded"),
}

#: The exception the SDK raises for each kind's status (exactly this class).
SDK_EXCEPTIONS: dict[str, type[openai.APIStatusError]] = {
    "invalid_request_error": openai.BadRequestError,
    "authentication_error": openai.AuthenticationError,
    "permission_error": openai.PermissionDeniedError,
    "not_found_error": openai.NotFoundError,
    "request_too_large": openai.APIStatusError,
    "rate_limit_error": openai.RateLimitError,
    "api_error": openai.InternalServerError,
    "overloaded_error": openai.InternalServerError,
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
def test_every_kind_round_trips_on_both_wires(wire: Wire, kind: str) -> None:
    wire_adapter = adapter(wire)
    body = wire_adapter.error_body(STATUS[kind], kind, "went wrong")
    assert body == error_body(STATUS[kind], kind, "went wrong")
    assert wire_adapter.decode_error(STATUS[kind], body) == (kind, "went wrong")


def test_an_unknown_kind_follows_the_status() -> None:
    assert error_body(404, "teapot", "m")["error"]["code"] == "model_not_found"
    assert error_body(429, "teapot", "m")["error"]["type"] == "requests"
    assert error_object("teapot", "m", "model") == {
        "message": "m",
        "type": "server_error",
        "param": "model",
        "code": None,
    }


#: (status, type, code) -> kind: bodies OpenAI sends, then compatible servers that name the
#: error by its canonical kind, as Anthropic does.
SENT: list[tuple[int, str, str | None, str]] = [
    (401, "invalid_request_error", "invalid_api_key", "authentication_error"),
    (403, "request_forbidden", "unsupported_country_region_territory", "permission_error"),
    (403, "invalid_request_error", "model_not_found", "permission_error"),  # no access
    (404, "invalid_request_error", "model_not_found", "not_found_error"),
    (400, "invalid_request_error", "context_length_exceeded", "request_too_large"),
    (400, "invalid_request_error", "invalid_prompt", "invalid_request_error"),
    (429, "tokens", "rate_limit_exceeded", "rate_limit_error"),
    (429, "insufficient_quota", "insufficient_quota", "rate_limit_error"),
    (500, "server_error", None, "api_error"),
    (500, "server_error", "server_is_overloaded", "overloaded_error"),
    (503, "server_error", None, "overloaded_error"),
    (503, "server_error", "slow_down", "overloaded_error"),
    (429, "rate_limit_error", None, "rate_limit_error"),
    (502, "overloaded_error", None, "overloaded_error"),
    (400, "authentication_error", None, "authentication_error"),
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
        (502, None, ("api_error", "upstream error (HTTP 502)")),
        (400, {}, ("invalid_request_error", "upstream error (HTTP 400)")),
        (429, {"error": "slow down"}, ("rate_limit_error", "slow down")),
        (401, {"error": "nope"}, ("authentication_error", "nope")),
        (500, {"error": 5}, ("api_error", "upstream error (HTTP 500)")),
        (500, {"error": []}, ("api_error", "upstream error (HTTP 500)")),
        (413, {"error": {"message": 5}}, ("request_too_large", "upstream error (HTTP 413)")),
        (403, {"message": "top-level"}, ("permission_error", "top-level")),
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
        (
            500,
            {"error": {"message": "odd", "type": "teapot", "code": "kettle"}},
            ("api_error", "odd"),
        ),
    ],
)
def test_junk_falls_back_to_the_status(status: int, body: Any, expected: tuple[str, str]) -> None:
    assert decode_error(status, body) == expected


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_a_stream_error_is_read_without_a_status(kind: str) -> None:
    assert stream_error(error_object(kind, "mid-stream")) == (kind, "mid-stream", STATUS[kind])
    _, error_type, code = OPENAI[kind]
    assert kind_of(code, error_type, 500) == kind


def test_a_junk_stream_error() -> None:
    assert stream_error("boom") == ("api_error", "boom", 500)
    assert stream_error(None) == ("api_error", "upstream error during streaming", 500)
    assert stream_error({"message": "", "type": "requests"}) == (
        "rate_limit_error",
        "upstream error during streaming",
        429,
    )


async def _raised(wire: Wire, kind: str) -> openai.APIStatusError:
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
async def test_the_sdk_raises_by_the_status_and_keeps_the_body(wire: Wire, kind: str) -> None:
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
