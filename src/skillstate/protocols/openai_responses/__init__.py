"""The OpenAI Responses wire (``POST /v1/responses``), as Codex CLI and the openai SDK speak it.

See ``request`` (bodies), ``params``, ``foreign`` (the body of another wire's request),
``messages`` and ``turns`` (the ``input`` / ``output`` items), ``response``, ``stream_decode``
/ ``stream_encode`` and ``errors``; ``chatgpt`` is the ChatGPT backend's dialect of it (Codex
signed in with ChatGPT).
"""

from __future__ import annotations

from skillstate.conversation import Request, Wire
from skillstate.protocols import Adapter
from skillstate.protocols.openai_responses.errors import decode_error, error_body
from skillstate.protocols.openai_responses.request import decode_request, encode_request
from skillstate.protocols.openai_responses.response import decode_response, encode_response
from skillstate.protocols.openai_responses.stream_decode import ResponsesStreamDecoder
from skillstate.protocols.openai_responses.stream_encode import ResponsesStreamEncoder


def stream_decoder() -> ResponsesStreamDecoder:
    return ResponsesStreamDecoder()


def stream_encoder(request: Request | None) -> ResponsesStreamEncoder:
    return ResponsesStreamEncoder(request)


def response_id(token: str) -> str:
    """A response id in this wire's shape, for a response the gateway writes itself."""
    return "resp_" + token


ADAPTER = Adapter(
    wire=Wire.RESPONSES,
    path="/v1/responses",
    decode_request=decode_request,
    encode_request=encode_request,
    decode_response=decode_response,
    encode_response=encode_response,
    stream_decoder=stream_decoder,
    stream_encoder=stream_encoder,
    error_body=error_body,
    decode_error=decode_error,
    response_id=response_id,
    history_key="input",
)

__all__ = [
    "ADAPTER",
    "ResponsesStreamDecoder",
    "ResponsesStreamEncoder",
    "decode_error",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "error_body",
    "response_id",
    "stream_decoder",
    "stream_encoder",
]
