"""The Anthropic Messages wire (``POST /v1/messages``), which Claude Code and the anthropic SDK
speak. ``ADAPTER`` is everything the server needs; the modules hold one noun each: request and
response bodies, another wire's request (``foreign``), content blocks, tools, parameters, usage,
stream events and errors."""

from __future__ import annotations

from skillstate.conversation import Request, Wire
from skillstate.protocols import Adapter
from skillstate.protocols.anthropic_messages.errors import decode_error, error_body
from skillstate.protocols.anthropic_messages.params import DEFAULT_MAX_TOKENS
from skillstate.protocols.anthropic_messages.request import decode_request, encode_request
from skillstate.protocols.anthropic_messages.response import (
    count_tokens_body,
    decode_response,
    encode_response,
)
from skillstate.protocols.anthropic_messages.stream_decode import MessagesStreamDecoder
from skillstate.protocols.anthropic_messages.stream_encode import MessagesStreamEncoder


def stream_decoder() -> MessagesStreamDecoder:
    return MessagesStreamDecoder()


def stream_encoder(request: Request | None) -> MessagesStreamEncoder:
    return MessagesStreamEncoder(request)


def response_id(token: str) -> str:
    """A message id in this wire's shape, for a response the gateway writes itself."""
    return "msg_" + token


ADAPTER = Adapter(
    wire=Wire.MESSAGES,
    path="/v1/messages",
    decode_request=decode_request,
    encode_request=encode_request,
    decode_response=decode_response,
    encode_response=encode_response,
    stream_decoder=stream_decoder,
    stream_encoder=stream_encoder,
    error_body=error_body,
    decode_error=decode_error,
    response_id=response_id,
    usage_required=True,
)

__all__ = [
    "ADAPTER",
    "DEFAULT_MAX_TOKENS",
    "MessagesStreamDecoder",
    "MessagesStreamEncoder",
    "count_tokens_body",
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
