"""The OpenAI Chat Completions wire (``POST /v1/chat/completions``).

Request, response, stream and error bodies of this wire to and from the canonical model; see
each module's docstring for the mapping it owns. Pure: no sockets, no disk, no clock.
"""

from __future__ import annotations

from skillstate.conversation import Request, Wire
from skillstate.protocols import Adapter
from skillstate.protocols.openai_chat.errors import decode_error, error_body
from skillstate.protocols.openai_chat.params import ask_usage
from skillstate.protocols.openai_chat.request import decode_request, encode_request
from skillstate.protocols.openai_chat.response import decode_response, encode_response
from skillstate.protocols.openai_chat.stream_decode import ChatStreamDecoder
from skillstate.protocols.openai_chat.stream_encode import ChatStreamEncoder

PATH = "/v1/chat/completions"


def stream_decoder() -> ChatStreamDecoder:
    return ChatStreamDecoder()


def stream_encoder(request: Request | None) -> ChatStreamEncoder:
    return ChatStreamEncoder(request)


def response_id(token: str) -> str:
    """A completion id in this wire's shape, for a response the gateway writes itself."""
    return "chatcmpl-" + token


ADAPTER = Adapter(
    wire=Wire.CHAT,
    path=PATH,
    decode_request=decode_request,
    encode_request=encode_request,
    decode_response=decode_response,
    encode_response=encode_response,
    stream_decoder=stream_decoder,
    stream_encoder=stream_encoder,
    error_body=error_body,
    decode_error=decode_error,
    response_id=response_id,
    for_upstream=ask_usage,
)

__all__ = [
    "ADAPTER",
    "PATH",
    "ChatStreamDecoder",
    "ChatStreamEncoder",
    "ask_usage",
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
