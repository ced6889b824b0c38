"""The JSON form of a streamed request, asked for one token: what the gateway sends to learn
why a server answered a stream with nothing at all (``Forward._why_empty``). A server that
cannot serve the request (a prompt over its context) refuses this form with its reason; one
that can answers it with no more work than one token.

Pure: bytes in, bytes out, the same on every wire (each names its stream switch ``stream``;
the output limit has a name per wire, and Chat's older ``max_tokens`` is the one every Chat
server reads)."""

from __future__ import annotations

from skillstate.conversation import Wire
from skillstate.support import jsonio

LIMIT_KEY = {
    Wire.CHAT: "max_tokens",
    Wire.RESPONSES: "max_output_tokens",
    Wire.MESSAGES: "max_tokens",
}
LIMIT_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def one_token_json_form(body: bytes | None, wire: Wire) -> bytes | None:
    """``body`` (a streamed request of ``wire``) as a JSON request for one token; None when it
    is no streamed request (not an object, or ``stream`` is not true)."""
    try:
        request = jsonio.loads(body or b"")
    except ValueError:
        return None
    if not isinstance(request, dict) or request.get("stream") is not True:
        return None
    request["stream"] = False
    request.pop("stream_options", None)
    for key in {key for key in LIMIT_KEYS if key in request} | {LIMIT_KEY[wire]}:
        request[key] = 1
    return jsonio.dumps(request)
