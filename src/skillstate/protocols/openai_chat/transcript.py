"""Canonical messages to the Chat wire's ``messages`` array, message by message.

Native requests (decoded from this wire) re-emit ``extra`` and follow their hints, so an
untouched request encodes to the JSON it came from. A request of another wire is encoded from
its canonical fields only; how its message list is reshaped for this wire (instructions,
coalescing, tool results and their images) is ``foreign``'s. Either way:

* Reasoning parts are omitted: this wire has no place for reasoning in requests (a signature
  from another provider could not be replayed anyway), except the reasoning keys of this
  wire's own assistant messages.
* What this wire cannot carry raises ``ProtocolError``: images in assistant or instruction
  messages, an ``Opaque`` item of another wire (one inside a tool result too, such as
  Anthropic's ``tool_reference``: the refusal names its type), an ``ArchiveRef`` left
  unrendered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

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
)
from skillstate.protocols.openai_chat.content import encode_content, opaque_data
from skillstate.protocols.openai_chat.tool_calls import encode_tool_call


def encode_messages(req: Request, custom_names: frozenset[str]) -> list[Json]:
    """The ``messages`` of a request of this wire."""

    def encode(message: Message) -> list[Json]:
        return encode_message(message, True, custom_names)

    messages = req.messages
    out = system_message(req.system)
    batch: list[Part] = []
    for i, message in enumerate(messages):
        out += encode_each([(i, message)], encode)
        if message.role == "tool":
            batch += message.parts
        if batch and (i + 1 == len(messages) or messages[i + 1].role != "tool"):
            out += result_images(batch, gateway_only=True)
            batch = []
    return out


def result_images(parts: Iterable[Part], *, gateway_only: bool) -> list[Json]:
    """The ``user`` message carrying the images of these tool results, or nothing: a ``tool``
    message of this wire holds text only. Each result's images follow a text naming its call,
    so the model can tell which result they belong to. ``gateway_only``: only the images the
    gateway made (hints ``{"by": "gateway"}``: the vision lane's pages), for a request of
    this wire, whose own images stay where the client put them."""
    shown: list[Part] = []
    for result in parts:
        if isinstance(result, ToolResult):
            images = [p for p in result.content if isinstance(p, Image)]
            if gateway_only:
                images = [p for p in images if _gateway_made(p)]
            if images:
                shown += [Text(f"image from tool result {result.call_id}"), *images]
    if not shown:
        return []
    return [{"role": "user", "content": encode_content(shown, None, False, empty="")[1]}]


def _gateway_made(part: Part) -> bool:
    return isinstance(part, Image) and part.hints.get("by") == "gateway"


def system_message(system: list[Text]) -> list[Json]:
    """``Request.system`` as one leading ``system`` message whose string content joins the
    texts with a blank line; nothing without instructions."""
    if not system:
        return []
    return [{"role": "system", "content": "\n\n".join(t.text for t in system)}]


def encode_each(
    numbered: Iterable[tuple[int, Message]], encode: Callable[[Message], list[Json]]
) -> list[Json]:
    """The wire messages of each ``(index, message)``, in order; an error that names no field
    names the message at fault (``messages[<index>]``)."""
    out: list[Json] = []
    for i, message in numbered:
        try:
            out.extend(encode(message))
        except ProtocolError as error:
            error.param = error.param or f"messages[{i}]"
            raise
    return out


def encode_message(msg: Message, native: bool, custom_names: frozenset[str]) -> list[Json]:
    """The wire messages of one canonical message: the ``tool`` messages of its tool results
    first, in order, then the rest of it (``native``: it came from this wire)."""
    if native and msg.hints.get("message") == "opaque" and len(msg.parts) == 1:
        part = msg.parts[0]
        if isinstance(part, Opaque):
            return [opaque_data(part)]
    if msg.role == "assistant":
        return [encode_assistant(msg, native, custom_names)]
    extra = msg.extra if native else {}
    results = [_tool_message(p, extra, native) for p in msg.parts if isinstance(p, ToolResult)]
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
    ``foreign``), from this one without the images the gateway made (``result_images``)."""
    content = result.content
    if not native:
        content = [part for part in content if not isinstance(part, Image)]
    elif any(_gateway_made(part) for part in content):
        content = [part for part in content if not _gateway_made(part)]
    for part in content:
        _check_content_part(part, native, images=False)
    shape = result.hints.get("content") if native else None
    present, value = encode_content(content, shape, native, empty="")
    body: Json = {"role": "tool", **extra, "tool_call_id": result.call_id}
    if present:
        body["content"] = value
    return body


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
