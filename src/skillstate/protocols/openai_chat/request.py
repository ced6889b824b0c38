"""Chat Completions request bodies (``POST /v1/chat/completions``) to and from ``Request``.

Identity law: for every valid body ``b``, ``encode_request(decode_request(b)) == b``. System
and developer messages stay in ``messages`` (``Request.system`` stays empty), unknown fields
stay in ``extra`` at every level, and keys sent as null are remembered in ``hints``.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, Request, Wire
from skillstate.protocols.fields import (
    fail,
    need_object,
    optional_list,
    required_list,
    required_str,
    without,
)
from skillstate.protocols.memo import ItemMemo
from skillstate.protocols.openai_chat.foreign import encode_foreign
from skillstate.protocols.openai_chat.messages import decode_messages
from skillstate.protocols.openai_chat.nulls import note_nulls, nulls_of, sent_null
from skillstate.protocols.openai_chat.params import KNOWN, decode_params, encode_params
from skillstate.protocols.openai_chat.tool_calls import custom_tool_names
from skillstate.protocols.openai_chat.tools import decode_tools, encode_tools
from skillstate.protocols.openai_chat.transcript import encode_messages

_KNOWN = ("model", "messages", "tools", *KNOWN)


def decode_request(body: Any, memo: ItemMemo | None = None) -> Request:
    """Validate and read a body; ``memo``: the session's previous messages
    (``protocols.memo``)."""
    raw = need_object(body, "body")
    model = required_str(raw, "model")
    if not model:
        raise fail("model", "must not be empty")
    messages = decode_messages(required_list(raw, "messages"), "messages", memo)
    nulls = sent_null(raw, ("tools",))
    hints: Json = {}
    tools_value = optional_list(raw, "tools")
    tools = [] if tools_value is None else decode_tools(tools_value, "tools")
    if tools_value is not None:
        hints["tools"] = True
    params, params_extra = decode_params(raw, hints, nulls)
    extra = {**without(raw, *_KNOWN), **params_extra}
    return Request(
        model=model,
        messages=messages,
        source=Wire.CHAT,
        tools=tools,
        params=params,
        extra=extra,
        hints=note_nulls(hints, nulls),
    )


def encode_request(req: Request) -> Json:
    """A body of this wire. A request from another wire is built from canonical fields only
    (see ``foreign.encode_foreign``)."""
    if req.source is not Wire.CHAT:
        return encode_foreign(req)
    body: Json = dict(req.extra)
    body["model"] = req.model
    body["messages"] = encode_messages(req, custom_tool_names(req))
    if req.tools or req.hints.get("tools"):
        body["tools"] = encode_tools(req.tools, native=True)
    elif "tools" in nulls_of(req.hints):
        body["tools"] = None
    encode_params(req, body)
    return body
