"""Chat Completions response bodies (``object: "chat.completion"``) to and from ``Response``.

The first choice is the canonical message. Its other keys (``index``, ``logprobs``) and every
further choice (``n`` > 1) stay in ``extra["choices"]``: this wire re-emits them, another wire
sees the first choice only. The original ``finish_reason`` and ``usage`` are kept in hints and
sent back while they still mean what the canonical fields say. A body without a usage object
(``usage`` absent or null) has no usage (``Response.usage`` None), and a reply of unknown usage
is sent without one (the field is optional on this wire), never with zeros.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, Message, Part, Request, Response, Text, Wire
from skillstate.protocols.fields import (
    need_object,
    optional_int,
    optional_str,
    required_list,
    required_object,
    without,
)
from skillstate.protocols.openai_chat.messages import decode_assistant
from skillstate.protocols.openai_chat.nulls import note_nulls, nulls_of, sent_null
from skillstate.protocols.openai_chat.tool_calls import custom_tool_names
from skillstate.protocols.openai_chat.transcript import encode_assistant
from skillstate.protocols.openai_chat.usage import (
    decode_usage,
    encode_usage,
    finish_reason,
    stop_reason,
)

_KNOWN = ("id", "model", "created", "choices", "usage")
#: What a body of this wire holds when the canonical response does not say.
_DEFAULTS: Json = {"id": "", "object": "chat.completion", "model": "", "created": 0, "usage": None}


def decode_response(body: Any) -> Response:
    raw = need_object(body, "body")
    hints: Json = {}
    response_id = optional_str(raw, "id")
    model = optional_str(raw, "model")
    created = optional_int(raw, "created")
    nulls = sent_null(raw, ("id", "model", "created"))
    choices = required_list(raw, "choices")
    extra = without(raw, *_KNOWN)
    message = Message("assistant", [])
    stop = None
    if choices:
        first = need_object(choices[0], "choices[0]")
        message = decode_assistant(
            required_object(first, "message", "choices[0]"), "choices[0].message"
        )
        if "finish_reason" in first:
            hints["finish_reason"] = first["finish_reason"]
        else:
            hints["no_finish_reason"] = True
        stop = stop_reason(first.get("finish_reason"))
        extra["choices"] = [without(first, "message", "finish_reason"), *choices[1:]]
    else:
        extra["choices"] = []
    if "usage" in raw:
        hints["usage"] = raw["usage"]
    absent = [key for key in _DEFAULTS if key not in raw]
    if absent:
        hints["absent"] = absent
    return Response(
        id=response_id or "",
        model=model or "",
        message=message,
        source=Wire.CHAT,
        stop_reason=stop,
        usage=decode_usage(raw["usage"]) if isinstance(raw.get("usage"), dict) else None,
        created=created,
        extra=extra,
        hints=note_nulls(hints, nulls),
    )


def encode_response(resp: Response, request: Request | None) -> Json:
    """A response body of this wire. From another wire: one choice, texts joined into the
    string content, reasoning omitted (this wire's responses have no place for it), calls to
    tools the client declared as custom given back in the custom shape, and ``created`` the
    time the request was received where that wire gives none."""
    native = resp.source is Wire.CHAT
    hints = resp.hints if native else {}
    nulls, absent = nulls_of(hints), hints.get("absent", ())
    body: Json = without(resp.extra, "choices") if native else {}
    if "object" not in body and "object" not in absent:
        body["object"] = _DEFAULTS["object"]
    created = resp.created
    if created is None and not native and request is not None:
        created = request.received  # a wire with no creation time: dated when it was asked
    for key, value in (("id", resp.id), ("model", resp.model), ("created", created)):
        if value is not None and value != "":
            body[key] = value
        elif key in nulls:
            body[key] = None
        elif key not in absent:
            body[key] = _DEFAULTS[key]
    body["choices"] = _choices(resp, native, custom_tool_names(request))
    usage = resp.usage
    if "usage" in hints:
        body["usage"] = None if usage is None else encode_usage(usage, hints["usage"])
    elif usage is not None:
        body["usage"] = encode_usage(usage)
    return body


def _choices(resp: Response, native: bool, custom_names: frozenset[str]) -> list[Json]:
    kept: list[Json] | None = resp.extra.get("choices") if native else None
    if kept == [] and not resp.message.parts:
        return []
    first: Json = dict(kept[0]) if kept else {"index": 0, "logprobs": None}
    message = resp.message
    # Only a list-shaped content of this wire is re-emitted part by part; a string one stays a
    # string even when the gateway composed the message from several replies' texts.
    if not native or message.hints.get("content") != "list":
        message = _joined(message)
    first["message"] = encode_assistant(message, native, custom_names)
    reason = finish_reason(resp.stop_reason, resp.hints.get("finish_reason") if native else None)
    if reason is not None or not native or not resp.hints.get("no_finish_reason"):
        first["finish_reason"] = reason if native or reason is not None else "stop"
    return [first, *(kept or [])[1:]]


def _joined(message: Message) -> Message:
    """The message with its texts joined into one: a response's content is one string."""
    texts = [p for p in message.parts if isinstance(p, Text) and not p.hints.get("refusal")]
    if len(texts) < 2:
        return message
    parts: list[Part] = []
    for part in message.parts:
        if part is texts[0]:
            parts.append(Text("".join(t.text for t in texts)))
        elif not any(part is text for text in texts):
            parts.append(part)
    return Message("assistant", parts, extra=message.extra, hints=message.hints)
