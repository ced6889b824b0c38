"""Request bodies of ``POST /v1/messages`` (and ``/v1/messages/count_tokens``, whose bodies are
the same without ``max_tokens``), to and from the canonical ``Request``.

Identity law: for every valid body ``b``, ``encode_request(decode_request(b)) == b`` (valid:
every thinking block in it carries the signature the API issued; see ``unsigned``). Shape
facts kept in ``hints``: whether ``system``, a message's content or a tool result's content was
a string, and which fields were present with a default value (``stream: false``,
``tools: []``, ``is_error: false``).

Nulls, a convention every module of this adapter follows: a known optional field sent as
``null`` is unset in the canonical model and stays in ``extra`` as ``null``
(``fields.split_known``), so an untouched object re-emits it, and a value a lane sets later
simply overrides it.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, Message, Part, Reasoning, Request, Role, Text
from skillstate.protocols.anthropic_messages.blocks import (
    WIRE,
    decode_blocks,
    encode_blocks,
    plain_text,
)
from skillstate.protocols.anthropic_messages.foreign import encode_foreign
from skillstate.protocols.anthropic_messages.params import KEYS, decode_params, encode_params
from skillstate.protocols.anthropic_messages.tools import decode_tools, encode_tool
from skillstate.protocols.fields import (
    at,
    fail,
    merged,
    need_object,
    required_list,
    required_str,
    split_known,
)
from skillstate.protocols.memo import ItemMemo, decode_items

_KEYS = ("model", "system", "messages", "tools", *KEYS)
_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system"}


def decode_request(body: Json, memo: ItemMemo | None = None) -> Request:
    """Validate and read a body. ``max_tokens`` is optional here: count_tokens bodies lack it,
    and the upstream is the judge of a messages body without one. ``memo``: the session's
    previous messages (``protocols.memo``)."""
    got, extra = split_known(need_object(body, "body"), _KEYS)
    model = required_str(got, "model")
    if not model:
        raise fail("model", "must not be empty")
    items = required_list(got, "messages")
    hints: Json = {}
    system = _decode_system(got.get("system"), hints)
    messages = decode_items(items, "messages", _decode_message, memo)
    tools = []
    if "tools" in got:
        tools, hints["tools"] = decode_tools(got["tools"]), True
    params = decode_params(got, hints)
    return Request(model, messages, WIRE, system, tools, params, extra, hints)


def _decode_system(value: Any, hints: Json) -> list[Text]:
    if value is None:
        return []
    if isinstance(value, str):
        hints["system"] = "str"
        return [Text(value)]
    hints["system"] = "list"
    system: list[Text] = []
    for i, part in enumerate(decode_blocks(value, "system")):
        if not isinstance(part, Text):
            raise fail(f"system[{i}]", "must be a text block")
        system.append(part)
    return system


def _decode_message(value: Any, path: str) -> Message:
    got, extra = split_known(need_object(value, path), ("role", "content"))
    role = _ROLES.get(required_str(got, "role", path))
    if role is None:
        raise fail(at(path, "role"), "must be user, assistant or system")
    content = got.get("content")
    if isinstance(content, str):
        return Message(role, [Text(content)], extra, {"content": "str"})
    if content is None:
        raise fail(at(path, "content"), "is required")
    return Message(role, decode_blocks(content, at(path, "content")), extra)


def encode_request(req: Request) -> Json:
    """This wire's body. A request from another wire is built from canonical fields only
    (see ``foreign.encode_foreign``)."""
    if req.source is not WIRE:
        return encode_foreign(req)
    out: Json = {"model": req.model}
    params = encode_params(req.params, req.hints, native=True, has_tools=bool(req.tools))
    if "max_tokens" in params:
        out["max_tokens"] = params.pop("max_tokens")
    system = _encode_system(req.system, req.hints.get("system"))
    if system is not None:
        out["system"] = system
    out["messages"] = [_encode_message(message) for message in req.messages]
    if req.tools or req.hints.get("tools"):
        out["tools"] = [encode_tool(tool, native=True) for tool in req.tools]
    out.update(params)
    return merged(out, req.extra)


def _encode_system(system: list[Text], shape: str | None) -> str | list[Json] | None:
    if shape == "str" and len(system) == 1 and plain_text(system[0]):
        return system[0].text
    if not system and shape is None:
        return None
    return encode_blocks(system, native=True)


def _encode_message(message: Message) -> Json:
    """A lane's ``developer`` message is sent as a ``system`` one; a ``tool`` message's
    results go in a ``user`` message. Thinking without a signature is left out (see
    ``unsigned``)."""
    role = message.role
    if role == "developer":
        role = "system"
    elif role == "tool":
        role = "user"
    out: Json = {"role": role}
    first = message.parts[0] if len(message.parts) == 1 else None
    if message.hints.get("content") == "str" and isinstance(first, Text) and plain_text(first):
        out["content"] = first.text
    else:
        parts = [part for part in message.parts if not unsigned(part)]
        out["content"] = encode_blocks(parts, native=True)
    return merged(out, message.extra)


def unsigned(part: Part) -> bool:
    """A thinking block with an empty or no signature: what a client of this wire got as the
    reasoning of another provider's reply (see ``response.reply_reasoning``) and sends back in
    its history. The API refuses a thinking block whose signature it did not issue, and there
    is nothing to replay, so a request leaves it out; signed thinking is sent as it came."""
    return isinstance(part, Reasoning) and not part.redacted and not part.signature
