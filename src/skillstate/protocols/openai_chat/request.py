"""Chat Completions request bodies (``POST /v1/chat/completions``) to and from ``Request``.

Identity law: for every valid body ``b``, ``encode_request(decode_request(b)) == b``. System
and developer messages stay in ``messages`` (``Request.system`` stays empty), unknown fields
stay in ``extra`` at every level, and keys sent as null are remembered in ``hints``.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, Request, Wire
from skillstate.protocols.openai_chat import fields as f
from skillstate.protocols.openai_chat.messages import decode_messages
from skillstate.protocols.openai_chat.params import KNOWN, decode_params, encode_params
from skillstate.protocols.openai_chat.tool_calls import custom_tool_names
from skillstate.protocols.openai_chat.tools import decode_tools, encode_tools
from skillstate.protocols.openai_chat.transcript import encode_messages

_KNOWN = ("model", "messages", "tools", *KNOWN)


def decode_request(body: Any) -> Request:
    raw = f.want(body, f.is_object, "body")
    model = f.required(raw, "model", f.is_str, "")
    if not model:
        f.fail("model", "must not be empty")
    messages = decode_messages(f.required(raw, "messages", f.is_list, ""), "messages")
    nulls: set[str] = set()
    hints: Json = {}
    tools_value = f.optional(raw, "tools", f.is_list, "", nulls)
    tools = [] if tools_value is None else decode_tools(tools_value, "tools")
    if tools_value is not None:
        hints["tools"] = True
    params, params_extra = decode_params(raw, hints, nulls)
    extra = {**f.rest(raw, _KNOWN), **params_extra}
    return Request(
        model=model,
        messages=messages,
        source=Wire.CHAT,
        tools=tools,
        params=params,
        extra=extra,
        hints=f.note_nulls(hints, nulls),
    )


def encode_request(req: Request) -> Json:
    """A body of this wire. From another wire only the canonical fields are used; see
    ``transcript`` for how messages are reshaped and ``params`` for the parameters."""
    native = req.source is Wire.CHAT
    body: Json = dict(req.extra) if native else {}
    body["model"] = req.model
    body["messages"] = encode_messages(req, custom_tool_names(req))
    if req.tools or (native and req.hints.get("tools")):
        body["tools"] = encode_tools(req.tools, native)
    elif native and "tools" in f.nulls_of(req.hints):
        body["tools"] = None
    encode_params(req, body)
    return body
