"""Non-streaming response bodies (``type: "message"``) to and from the canonical ``Response``.

Identity law: ``encode_response(decode_response(b), None) == b`` for every valid body ``b``.
Fields the model does not name (``type``, ``role``, ``stop_sequence``, ``container``,
``stop_details`` ...) stay in ``extra``; the usage object's fields beyond the token counts
(``service_tier``, ``server_tool_use``, ``cache_creation`` ...) in ``extra["usage"]``.

This wire requires ``usage``. A body without one (a server that sends none) has no usage
(``Response.usage`` None) and re-encodes as it came; a reply of unknown usage from another wire
reaches the encoder with the gateway's own count in it (``Adapter.usage_required``: the round
loop counts it), so zeros are only what an encoder given nothing writes.
"""

from __future__ import annotations

from skillstate.conversation import Json, Message, Part, Reasoning, Request, Response, Usage
from skillstate.protocols.anthropic_messages.blocks import (
    WIRE,
    decode_blocks,
    encode_blocks,
    encode_part,
)
from skillstate.protocols.anthropic_messages.foreign import check_parts
from skillstate.protocols.anthropic_messages.usage import (
    COUNTS,
    MESSAGE_KEYS,
    decode_stop,
    encode_stop,
    encode_usage,
    read_counts,
    stop_kept,
    to_usage,
)
from skillstate.protocols.fields import need_object, required_str, split_known

_KEYS = ("id", "model", "content", "stop_reason", "usage")


def decode_response(body: Json) -> Response:
    got, extra = split_known(need_object(body, "body"), _KEYS)
    hints: Json = {}
    usage = None
    if "usage" in got:
        counts, usage_extra = read_counts(got["usage"], "usage")
        hints["usage_keys"] = list(counts)
        if usage_extra:
            extra["usage"] = usage_extra
        usage = to_usage(counts, usage_extra)
    stop_reason = got.get("stop_reason")
    stop = decode_stop(stop_reason)
    if stop_kept(stop_reason, stop):
        hints["stop_reason"] = stop_reason
    return Response(
        id=required_str(got, "id"),
        model=required_str(got, "model"),
        message=Message("assistant", decode_blocks(got.get("content"), "content")),
        source=WIRE,
        stop_reason=stop,
        usage=usage,
        extra=extra,
        hints=hints,
    )


def encode_response(resp: Response, request: Request | None = None) -> Json:
    """This wire's body. From another wire: content from canonical parts (reasoning is shown,
    see ``reply_reasoning``), ``stop_sequence`` null (no other wire says which one matched),
    all four token counts and the cache writes' breakdown, and the request's model where the
    response names none."""
    native = resp.source is WIRE
    out: Json = {
        "id": resp.id,
        "type": "message",
        "role": "assistant",
        "model": resp.model or (request.model if request is not None else ""),
        "content": _content(resp.message.parts, native),
        "stop_reason": None,
        "stop_sequence": None,
    }
    if resp.stop_reason is not None or not native:
        raw = resp.hints.get("stop_reason") if native else None
        out["stop_reason"] = encode_stop(resp.stop_reason, raw)
    if not native:
        out["usage"] = encode_usage(resp.usage or Usage(), MESSAGE_KEYS)
        return out
    usage_extra = resp.extra.get("usage")
    keys = resp.hints.get("usage_keys", COUNTS)
    if resp.usage is not None:
        extra = usage_extra if isinstance(usage_extra, dict) else None
        out["usage"] = encode_usage(resp.usage, keys, extra)
    elif "usage" in resp.extra:  # sent as null, kept in extra as such
        out["usage"] = None
    out.update((key, value) for key, value in resp.extra.items() if key != "usage")
    return out


def _content(parts: list[Part], native: bool) -> list[Json]:
    if native:
        return encode_blocks(parts, native=True)
    check_parts(parts, "assistant", "assistant", "content")
    blocks = (
        reply_reasoning(p) if isinstance(p, Reasoning) else encode_part(p, False) for p in parts
    )
    return [block for block in blocks if block is not None]


def reply_reasoning(part: Reasoning) -> Json | None:
    """Reasoning from another wire in a reply to the client. Clients show thinking, so a
    summary with no signature is sent as a thinking block with an empty signature (this
    wire's type requires one); sent back in the client's history, a request leaves it out,
    since the API refuses a signature it did not issue (see ``request.unsigned``). Reasoning
    with neither text nor signature is left out."""
    if part.redacted:
        return encode_part(part, native=False)
    if not part.text and part.signature is None:
        return None
    return {"type": "thinking", "thinking": part.text, "signature": part.signature or ""}


def count_tokens_body(tokens: int) -> Json:
    """The reply of ``POST /v1/messages/count_tokens``: the request's prompt tokens."""
    return {"input_tokens": tokens}
