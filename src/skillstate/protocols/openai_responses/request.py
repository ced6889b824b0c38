"""``POST /v1/responses`` request bodies to the canonical ``Request`` and back.

``instructions`` is the system text; ``input`` a string (one user message, hinted
``input_string``) or an item list (see ``messages``); the generation parameters are read by
``params``. Every other field (``include``, ``store``, ``prompt_cache_key``, ``text``,
``metadata``, the rest of ``reasoning``...) stays in ``extra``; ``text.format`` and the
log-probability fields are read from it too (see ``outputs``). Hints: ``keys`` (which
modelled fields were present) and ``nulls`` (which of them were null), so an untouched body
re-encodes to the same JSON. A request of another wire is encoded by ``foreign``.
"""

from __future__ import annotations

from skillstate.conversation import Json, Message, Request, Text, Wire
from skillstate.protocols.fields import (
    fail,
    need_object,
    need_text_or_list,
    optional_list,
    optional_str,
    required_str,
    without,
)
from skillstate.protocols.memo import ItemMemo
from skillstate.protocols.openai_responses.foreign import encode_foreign
from skillstate.protocols.openai_responses.messages import decode_input, encode_input
from skillstate.protocols.openai_responses.params import KEYS, decode_params, encode_params
from skillstate.protocols.openai_responses.tools import decode_tools, encode_tools

_MODELLED = ("model", "input", "instructions", "tools", *KEYS)


def decode_request(body: Json, memo: ItemMemo | None = None) -> Request:
    """Validate and read a body; ``memo``: the session's previous input (``protocols.memo``:
    this wire's items group into messages, so it keeps where each message begins)."""
    body = need_object(body, "body")
    model = required_str(body, "model")
    if not model:
        raise fail("model", "must not be empty")
    if "input" not in body:
        raise fail("input", "is required")
    hints: Json = {
        "keys": [key for key in _MODELLED if key in body],
        "nulls": [key for key in _MODELLED if key in body and body[key] is None],
    }
    raw = body["input"]
    if isinstance(raw, str):
        messages = [Message("user", [Text(raw)])]
        hints["input_string"] = True
    else:
        messages = decode_input(need_text_or_list(raw, "input", "input items"), memo)
    instructions = optional_str(body, "instructions")
    extra = without(body, *_MODELLED)
    return Request(
        model=model,
        messages=messages,
        source=Wire.RESPONSES,
        system=[] if instructions is None else [Text(instructions)],
        tools=decode_tools(optional_list(body, "tools") or []),
        params=decode_params(body, extra, hints),
        extra=extra,
        hints=hints,
    )


def encode_request(req: Request) -> Json:
    """A body of this wire. A request from another wire is built from canonical fields only
    (see ``foreign.encode_foreign``)."""
    if req.source is not Wire.RESPONSES:
        return encode_foreign(req)
    custom = frozenset(t.name for t in req.tools if t.kind == "custom")
    keys: list[str] = req.hints.get("keys", [])
    nulls: list[str] = req.hints.get("nulls", [])
    body: Json = dict(req.extra)
    body["model"] = req.model
    body["input"] = _encode_input(req, custom)
    if req.system:
        body["instructions"] = "\n\n".join(part.text for part in req.system)
    elif "instructions" in keys:
        body["instructions"] = None
    if req.tools or "tools" in keys:
        body["tools"] = (
            None if not req.tools and "tools" in nulls else encode_tools(req.tools, own=True)
        )
    encode_params(req, body, keys, nulls)
    return body


def _encode_input(req: Request, custom: frozenset[str]) -> str | list[Json]:
    if req.hints.get("input_string") and len(req.messages) == 1:
        only = req.messages[0]
        if only.role == "user" and len(only.parts) == 1 and isinstance(only.parts[0], Text):
            return only.parts[0].text
    return encode_input(req.messages, own=True, custom=custom)
