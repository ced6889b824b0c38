"""Canonical messages to the Chat wire's ``messages`` array.

Native requests (decoded from this wire) re-emit ``extra`` and follow their hints, so an
untouched request encodes to the JSON it came from. Requests of another wire are built from
the canonical fields only, shaped the way this wire wants them:

* ``Request.system`` becomes one leading ``system`` message whose string content joins the
  texts with a blank line.
* Consecutive assistant messages merge into one (one assistant message per model turn).
* Tool results in a ``user`` message are split out, in order, into ``tool`` messages placed
  before the rest of that message. This wire has no error flag on a tool result: the text of
  an ``is_error`` result is sent exactly as it is, and it is that text which tells the model
  the call failed.
* A ``tool`` message holds text only, so the images of tool results (Claude Code's ``Read``
  of a picture) travel in one ``user`` message right after the batch's ``tool`` messages,
  each result's images behind a text naming it (``image from tool result <call id>``);
  the ``tool`` message keeps the result's text. Consecutive ``tool`` messages coalesce for
  this, so a batch's images come after all of its results.
* Reasoning parts are omitted: this wire has no place for reasoning in requests (a signature
  from another provider could not be replayed anyway).
* What this wire cannot carry raises ``ProtocolError``: images in assistant or instruction
  messages, an
  ``Opaque`` item of another wire (one inside a tool result too, such as Anthropic's
  ``tool_reference``: the refusal names its type), an ``ArchiveRef`` left unrendered.
"""

from __future__ import annotations

from skillstate.conversation import (
    Image,
    Json,
    Message,
    Opaque,
    Part,
    ProtocolError,
    Reasoning,
    Request,
    Text,
    ToolCall,
    ToolResult,
    Wire,
)
from skillstate.protocols.openai_chat.content import encode_content, opaque_data
from skillstate.protocols.openai_chat.tool_calls import encode_tool_call


def encode_messages(req: Request, custom_names: frozenset[str]) -> list[Json]:
    native = req.source is Wire.CHAT
    out: list[Json] = []
    if req.system:
        out.append({"role": "system", "content": "\n\n".join(t.text for t in req.system)})
    numbered = list(enumerate(req.messages))
    for i, message in numbered if native else _coalesce(numbered):
        try:
            out.extend(_encode_message(message, native, custom_names))
        except ProtocolError as error:
            error.param = error.param or f"messages[{i}]"
            raise
    return out


def _coalesce(numbered: list[tuple[int, Message]]) -> list[tuple[int, Message]]:
    """Consecutive assistant messages as one, numbered by the first of them; consecutive
    tool messages too (one batch of results)."""
    merged: list[tuple[int, Message]] = []
    for i, message in numbered:
        role = message.role
        if merged and role in ("assistant", "tool") and merged[-1][1].role == role:
            first, previous = merged[-1]
            merged[-1] = (first, Message(role, [*previous.parts, *message.parts]))
        else:
            merged.append((i, message))
    return merged


def _encode_message(msg: Message, native: bool, custom_names: frozenset[str]) -> list[Json]:
    if native and msg.hints.get("message") == "opaque" and len(msg.parts) == 1:
        part = msg.parts[0]
        if isinstance(part, Opaque):
            return [opaque_data(part)]
    if msg.role == "assistant":
        return [encode_assistant(msg, native, custom_names)]
    extra = msg.extra if native else {}
    results = [_tool_message(p, extra, native) for p in msg.parts if isinstance(p, ToolResult)]
    results += _result_images(msg.parts, native)
    rest = [p for p in msg.parts if not isinstance(p, ToolResult)]
    if msg.role == "tool":
        if rest:
            raise ProtocolError(f"a tool message cannot hold a {type(rest[0]).__name__} part")
        return results
    if results and not rest:
        return results
    for part in rest:
        _check_content_part(part, native, images=msg.role == "user")
    shape = msg.hints.get("content") if native else None
    present, value = encode_content(rest, shape, native, empty="")
    body: Json = {"role": msg.role, **extra}
    if present:
        body["content"] = value
    return [*results, body]


def _check_content_part(part: Part, native: bool, *, images: bool) -> None:
    if isinstance(part, Text | Opaque) or (isinstance(part, Image) and (images or native)):
        return
    raise ProtocolError(f"a {type(part).__name__} part cannot be message content on this wire")


def _tool_message(result: ToolResult, extra: Json, native: bool) -> Json:
    """The ``tool`` message of a result; from another wire without its images (see
    ``_result_images``)."""
    content = result.content
    if not native:
        content = [part for part in content if not isinstance(part, Image)]
    for part in content:
        _check_content_part(part, native, images=False)
    shape = result.hints.get("content") if native else None
    present, value = encode_content(content, shape, native, empty="")
    body: Json = {"role": "tool", **extra, "tool_call_id": result.call_id}
    if present:
        body["content"] = value
    return body


def _result_images(parts: list[Part], native: bool) -> list[Json]:
    """The ``user`` message carrying the images of these tool results, or nothing: a ``tool``
    message of this wire holds text only. Each result's images follow a text naming its call,
    so the model can tell which result they belong to."""
    if native:
        return []
    shown: list[Part] = []
    for result in parts:
        if isinstance(result, ToolResult):
            images = [part for part in result.content if isinstance(part, Image)]
            if images:
                shown += [Text(f"image from tool result {result.call_id}"), *images]
    if not shown:
        return []
    return [{"role": "user", "content": encode_content(shown, None, False, empty="")[1]}]


def encode_assistant(msg: Message, native: bool, custom_names: frozenset[str]) -> Json:
    """One assistant message: content parts, then ``tool_calls``; reasoning only natively."""
    body: Json = {"role": "assistant", **(msg.extra if native else {})}
    if native and msg.hints.get("no_role"):
        del body["role"]
    content: list[Part] = []
    calls: list[Json] = []
    for part in msg.parts:
        if isinstance(part, ToolCall):
            calls.append(encode_tool_call(part, native, custom_names))
        elif isinstance(part, Opaque) and part.hints.get("in") == "tool_calls":
            calls.append(opaque_data(part))
        elif native and isinstance(part, Text) and part.hints.get("refusal"):
            body["refusal"] = (body.get("refusal") or "") + part.text
        elif isinstance(part, Reasoning):
            key = part.hints.get("key")
            if native and key:
                body[key] = body.get(key, "") + part.text
        else:
            _check_content_part(part, native, images=False)
            content.append(part)
    shape = msg.hints.get("content") if native else None
    empty = None if calls else ""
    present, value = encode_content(content, shape, native, empty=empty)
    if present:
        body["content"] = value
    if calls:
        body["tool_calls"] = calls
    elif native and msg.hints.get("tool_calls") == "null":
        body["tool_calls"] = None
    elif native and msg.hints.get("tool_calls") == "empty":
        body["tool_calls"] = []
    return body
