"""Non-streaming ``response`` objects to the canonical ``Response`` and back.

The ``output`` items are the parts of one assistant message (see ``turns``); ``usage`` and
``status`` follow ``usage``. Every field the model does not name (``object``, the echoed request
settings, ``completed_at``...) stays in ``extra``; the raw ``status``, ``incomplete_details``,
``error`` and ``usage`` are hints, re-emitted while they still agree with the canonical stop
reason and usage. A body whose ``usage`` is absent or null has no usage (``Response.usage``
None), and a reply of unknown usage is sent with ``"usage": null``, as the API types it.

From another wire the body has what the SDK's ``Response`` model requires: output items get ids
derived from the response id, the request settings are echoed from the client's request, and
``created_at`` is the time that request was received where the other wire gives none.
"""

from __future__ import annotations

from skillstate.conversation import Json, Message, Part, ProtocolError, Request, Response, Wire
from skillstate.protocols.fields import (
    need_object,
    optional_str,
    required_list,
    required_str,
    without,
)
from skillstate.protocols.openai_responses.echo import ECHO_KEYS, custom_names, echo, item_ids
from skillstate.protocols.openai_responses.turns import decode_item, encode_items
from skillstate.protocols.openai_responses.usage import (
    decode_usage,
    encode_usage,
    has_call,
    status_for,
    stop_reason,
)

_MODELLED = (
    "id",
    "model",
    "created_at",
    "output",
    "usage",
    "status",
    "incomplete_details",
    "error",
)
#: What a failed response says when the canonical one carries no error of this wire.
FAILED = {"code": "server_error", "message": "The model failed to generate a response."}


def decode_response(body: Json) -> Response:
    """Raises ``ProtocolError`` with status 502: a malformed body is the upstream's fault."""
    try:
        return _decode(need_object(body, "response"))
    except ProtocolError as exc:
        exc.status = 502
        raise


def _decode(body: Json) -> Response:
    output = required_list(body, "output")
    parts: list[Part] = []
    for i, item in enumerate(output):
        parts.extend(decode_item(need_object(item, f"output[{i}]"), i, f"output[{i}]"))
    created = body.get("created_at")
    hints: Json = {key: body[key] for key in _MODELLED[4:] if key in body}
    hints["keys"] = [key for key in _MODELLED if key in body]
    if isinstance(created, bool) or not isinstance(created, int):
        if "created_at" in body:
            hints["created_at"] = created
        created = None
    return Response(
        id=required_str(body, "id"),
        model=optional_str(body, "model") or "",
        message=Message("assistant", parts),
        source=Wire.RESPONSES,
        stop_reason=stop_reason(
            body.get("status"), body.get("incomplete_details"), has_call(output)
        ),
        usage=decode_usage(body["usage"]) if isinstance(body.get("usage"), dict) else None,
        created=created,
        extra=without(body, *_MODELLED),
        hints=hints,
    )


def encode_response(resp: Response, request: Request | None) -> Json:
    own = resp.source is Wire.RESPONSES
    output = encode_items(
        resp.message.parts, own=own, custom=custom_names(request), ids=item_ids(resp.id)
    )
    hints = resp.hints if own else {}
    keys: list[str] = hints.get("keys", list(_MODELLED))
    body: Json = dict(resp.extra) if own else {"object": "response"}
    if request is not None or not own:
        body = {k: v for k, v in body.items() if k not in ECHO_KEYS} | echo(request)
    body["id"] = resp.id
    if "model" in keys:
        body["model"] = resp.model
    if "created_at" in keys:
        created = resp.created
        if created is None and not own and request is not None:
            created = request.received  # a wire with no creation time: dated when asked
        body["created_at"] = hints.get("created_at", created or 0)
    body["output"] = output
    body.update(_outcome(resp, output, hints, keys))
    if "usage" in keys:
        body["usage"] = _usage(resp, hints)
    return body


def _usage(resp: Response, hints: Json) -> Json | None:
    """The body's ``usage``: this wire's own while it says the same, null when the usage is
    unknown (the field is nullable: never zeros the upstream did not send)."""
    usage = resp.usage
    if usage is None:
        return None
    original = hints.get("usage")
    if isinstance(original, dict) and decode_usage(original) == usage:
        return original
    return encode_usage(usage)


def _outcome(resp: Response, output: list[Json], hints: Json, keys: list[str]) -> Json:
    """``status``, ``incomplete_details`` and ``error``: this wire's own while they say what
    the canonical stop reason says, else derived from it."""
    raw = (hints.get("status"), hints.get("incomplete_details"))
    if hints and stop_reason(*raw, has_call(output)) == resp.stop_reason:
        return {key: hints.get(key) for key in _MODELLED[5:] if key in keys}
    status, incomplete = status_for(resp.stop_reason)
    outcome: Json = {"status": status, "incomplete_details": incomplete, "error": None}
    if status == "failed":
        outcome["error"] = hints.get("error") or FAILED
    return outcome
