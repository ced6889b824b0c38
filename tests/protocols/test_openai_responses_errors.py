"""OpenAI error bodies: every canonical kind written in OpenAI's words and read back, and
tolerance of junk from an upstream."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from openai.types.responses import ResponseErrorEvent

from skillstate.conversation import Wire
from skillstate.protocols import ERROR_KINDS, adapter
from skillstate.protocols.openai_responses import decode_error, error_body
from skillstate.protocols.openai_responses.errors import STATUS, event_code, kind_of


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_every_kind_round_trips(kind: str) -> None:
    status = STATUS[kind]
    body = error_body(status, kind, "went wrong")
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["message"] == "went wrong"
    assert decode_error(status, body) == (kind, "went wrong")


def test_openai_pairs() -> None:
    assert error_body(401, "authentication_error", "m")["error"] == {
        "message": "m",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
    assert error_body(429, "rate_limit_error", "m")["error"]["type"] == "requests"
    assert error_body(500, "api_error", "m")["error"] == {
        "message": "m",
        "type": "server_error",
        "param": None,
        "code": None,
    }


def test_an_unknown_kind_follows_the_status() -> None:
    assert error_body(404, "teapot", "m")["error"]["code"] == "model_not_found"


async def test_the_sdk_raises_by_our_status_and_keeps_our_body() -> None:
    """What a client sees: the SDK's exception for the status, with our code and message."""

    async def refuse(_: web.Request) -> web.Response:
        return web.json_response(error_body(429, "rate_limit_error", "slow down"), status=429)

    app = web.Application()
    app.router.add_post("/v1/responses", refuse)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    client = openai.AsyncOpenAI(
        base_url=f"http://127.0.0.1:{server.port}/v1", api_key="sk-test", max_retries=0
    )
    try:
        with pytest.raises(openai.RateLimitError) as caught:
            await client.responses.create(model="m", input="hi")
    finally:
        await client.close()
        await server.close()
    assert caught.value.code == "rate_limit_exceeded" and "slow down" in caught.value.message


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            400,
            {"error": {"message": "bad", "type": "invalid_request_error", "code": None}},
            ("invalid_request_error", "bad"),
        ),
        (
            400,
            {
                "error": {
                    "message": "too long",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
            ("request_too_large", "too long"),
        ),
        (
            429,
            {
                "error": {
                    "message": "quota",
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                }
            },
            ("rate_limit_error", "quota"),
        ),
        (
            503,
            {"error": {"message": "busy", "type": "server_error", "code": None}},
            ("api_error", "busy"),
        ),
        (502, None, ("api_error", "The upstream answered HTTP 502.")),
        (401, {"error": "nope"}, ("authentication_error", "nope")),
        (403, {"message": "top-level"}, ("permission_error", "top-level")),
        (413, {"error": {"message": 5}}, ("request_too_large", "The upstream answered HTTP 413.")),
        (500, {"error": []}, ("api_error", "The upstream answered HTTP 500.")),
    ],
)
def test_decoding_upstream_errors(status: int, body: Any, expected: tuple[str, str]) -> None:
    assert decode_error(status, body) == expected


def test_stream_error_codes() -> None:
    assert event_code("rate_limit_error") == "rate_limit_exceeded"
    assert event_code("api_error") == "server_error"
    assert kind_of("server_error", None, 500) == "api_error"
    event = {
        "type": "error",
        "code": event_code("overloaded_error"),
        "message": "m",
        "param": None,
        "sequence_number": 3,
    }
    ResponseErrorEvent.model_validate(event)


def test_the_adapter_exposes_the_error_functions() -> None:
    responses = adapter(Wire.RESPONSES)
    assert responses.error_body is error_body and responses.decode_error is decode_error
