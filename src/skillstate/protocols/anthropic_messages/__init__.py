"""The Anthropic Messages wire (``POST /v1/messages``), which Claude Code and the anthropic SDK
speak. ``ADAPTER`` is everything the server needs; the modules hold one noun each: request and
response bodies, content blocks, tools, parameters, usage, stream events and errors."""

from __future__ import annotations

from skillstate.conversation import Request, Wire
from skillstate.protocols import Adapter
from skillstate.protocols.anthropic_messages.errors import decode_error, error_body
from skillstate.protocols.anthropic_messages.params import DEFAULT_MAX_TOKENS
from skillstate.protocols.anthropic_messages.request import decode_request, encode_request
from skillstate.protocols.anthropic_messages.response import decode_response, encode_response
from skillstate.protocols.anthropic_messages.stream_decode import MessagesStreamDecoder
from skillstate.protocols.anthropic_messages.stream_encode import MessagesStreamEncoder


def stream_decoder() -> MessagesStreamDecoder:
    return MessagesStreamDecoder()


def stream_encoder(request: Request | None) -> MessagesStreamEncoder:
    return MessagesStreamEncoder(request)


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
)

__all__ = [
    "ADAPTER",
    "DEFAULT_MAX_TOKENS",
    "MessagesStreamDecoder",
    "MessagesStreamEncoder",
    "decode_error",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "error_body",
    "stream_decoder",
    "stream_encoder",
]
