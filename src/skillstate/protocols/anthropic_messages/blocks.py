"""Content blocks: the parts of messages, tool results and responses.

Block types the model names (``text``, ``image`` with a base64 or URL source, ``tool_use``,
``tool_result``, ``thinking``, ``redacted_thinking``) become canonical parts; every other type
(``document``, ``search_result``, ``server_tool_use``, ``web_search_tool_result``,
``container_upload``, ``mcp_tool_use``, an image from the Files API ...) is kept whole as an
``Opaque`` part. Inside a ``tool_result``'s content the same rule holds item by item: text and
images are modelled, any other block (``tool_reference`` from tool search, ``document``,
``search_result``...) is an ``Opaque`` item of the ``ToolResult``, so the result still answers
its call.

Encoding takes ``native``: true when the request or response came from this wire, so that
``extra`` and ``hints`` apply; false when it came from another wire, whose extra is ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from skillstate.conversation import (
    Image,
    Json,
    Opaque,
    Part,
    ProtocolError,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Wire,
)
from skillstate.protocols.anthropic_messages.cache import cache_json, decode_cache
from skillstate.protocols.fields import (
    at,
    merged,
    need_object,
    need_str,
    need_text_or_list,
    optional_bool,
    optional_str,
    required_str,
    split_known,
)
from skillstate.support.jsonio import dumps_str, loads

WIRE = Wire.MESSAGES


def decode_blocks(value: Any, path: str) -> list[Part]:
    items = need_text_or_list(value, path, "content blocks")
    return [decode_block(item, f"{path}[{i}]") for i, item in enumerate(items)]


def decode_block(value: Any, path: str) -> Part:
    block = need_object(value, path)
    kind = need_str(block.get("type"), at(path, "type"))
    decode = _DECODERS.get(kind)
    return Opaque(WIRE, block) if decode is None else decode(block, path)


def _text(block: Json, path: str) -> Text:
    got, extra = split_known(block, ("type", "text", "cache_control"))
    hints: Json = {}
    cache = decode_cache(got, path, hints)
    return Text(required_str(got, "text", path), cache=cache, extra=extra, hints=hints)


def _image(block: Json, path: str) -> Part:
    got, extra = split_known(block, ("type", "source", "cache_control"))
    spath = at(path, "source")
    source = need_object(got.get("source"), spath)
    hints: Json = {}
    cache = decode_cache(got, path, hints)
    kind = source.get("type")
    if kind == "base64" and source.keys() <= {"type", "media_type", "data"}:
        data, media_type = (
            required_str(source, "data", spath),
            required_str(source, "media_type", spath),
        )
        return Image(data=data, media_type=media_type, cache=cache, extra=extra, hints=hints)
    if kind == "url" and source.keys() == {"type", "url"}:
        return Image(url=required_str(source, "url", spath), cache=cache, extra=extra, hints=hints)
    return Opaque(WIRE, block)


def _tool_use(block: Json, path: str) -> ToolCall:
    """``input`` becomes compact JSON text; decoding that text gives back the equal object."""
    got, extra = split_known(block, ("type", "id", "name", "input", "cache_control"))
    arguments = need_object(got.get("input"), at(path, "input"))
    hints: Json = {}
    return ToolCall(
        id=required_str(got, "id", path),
        name=required_str(got, "name", path),
        arguments=dumps_str(arguments),
        cache=decode_cache(got, path, hints),
        extra=extra,
        hints=hints,
    )


def _tool_result(block: Json, path: str) -> ToolResult:
    got, extra = split_known(block, ("type", "tool_use_id", "content", "is_error", "cache_control"))
    call_id = required_str(got, "tool_use_id", path)
    hints: Json = {}
    content = got.get("content")
    parts: list[Text | Image | Opaque] = []
    if content is None:
        hints["content"] = "none"
    elif isinstance(content, str):
        parts, hints["content"] = [Text(content)], "str"
    else:
        cpath = at(path, "content")
        items = need_text_or_list(content, cpath, "content blocks")
        parts = [_result_item(item, f"{cpath}[{i}]") for i, item in enumerate(items)]
    is_error = optional_bool(got, "is_error", path)
    if is_error is not None:
        hints["is_error"] = True
    cache = decode_cache(got, path, hints)
    return ToolResult(call_id, parts, bool(is_error), cache=cache, extra=extra, hints=hints)


def _result_item(value: Any, path: str) -> Text | Image | Opaque:
    """One block of a tool result's content. A block the API does not allow there (a
    ``tool_use``, a ``thinking``) is kept whole too: the API, not the gateway, refuses it."""
    part = decode_block(value, path)
    if isinstance(part, Text | Image | Opaque):
        return part
    return Opaque(WIRE, need_object(value, path))


def _thinking(block: Json, path: str) -> Reasoning:
    got, extra = split_known(block, ("type", "thinking", "signature"))
    text = required_str(got, "thinking", path)
    return Reasoning(text, signature=optional_str(got, "signature", path), extra=extra)


def _redacted_thinking(block: Json, path: str) -> Reasoning:
    got, extra = split_known(block, ("type", "data"))
    return Reasoning(signature=required_str(got, "data", path), redacted=True, extra=extra)


_DECODERS: dict[str, Callable[[Json, str], Part]] = {
    "text": _text,
    "image": _image,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
    "thinking": _thinking,
    "redacted_thinking": _redacted_thinking,
}


def encode_blocks(parts: Sequence[Part], native: bool) -> list[Json]:
    """The blocks for ``parts``, leaving out those ``encode_part`` leaves out."""
    blocks = (encode_part(part, native) for part in parts)
    return [block for block in blocks if block is not None]


def encode_part(part: Part, native: bool) -> Json | None:
    """The block for ``part``, or None where the part is left out.

    Left out, from another wire only: an empty text (the Messages API refuses empty text
    blocks, and it carries nothing) and a reasoning part with no signature (there is nothing
    this wire can replay; see ``_encode_reasoning``)."""
    if isinstance(part, Text):
        return _encode_text(part, native)
    if isinstance(part, ToolCall):
        return _encode_tool_call(part, native)
    if isinstance(part, ToolResult):
        return _encode_tool_result(part, native)
    if isinstance(part, Image):
        return _encode_image(part, native)
    if isinstance(part, Reasoning):
        return _encode_reasoning(part, native)
    if isinstance(part, Opaque):
        return encode_opaque(part)
    raise ProtocolError(f"an archive ref ({part.ref}) must be rendered before encoding", status=500)


def _encode_text(part: Text, native: bool) -> Json | None:
    if not native and not part.text:
        return None
    out: Json = {"type": "text", "text": part.text}
    return _finish(out, cache_json(part, native), part.extra if native else None)


def _encode_tool_call(part: ToolCall, native: bool) -> Json:
    out: Json = {"type": "tool_use", "id": part.id, "name": part.name, "input": _tool_input(part)}
    return _finish(out, cache_json(part, native), part.extra if native else None)


def _tool_input(part: ToolCall) -> Json:
    """The ``input`` object of a call. A ``custom`` (freeform) call's raw input travels as
    ``{"input": "<raw>"}``; an empty argument text (some wires send one for a call without
    arguments) is ``{}``."""
    if part.kind == "custom":
        return {"input": part.arguments}
    text = part.arguments.strip() or "{}"
    try:
        value = loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ProtocolError(f"the arguments of tool call {part.id!r} are not a JSON object")
    return value


def _encode_tool_result(part: ToolResult, native: bool) -> Json:
    out: Json = {"type": "tool_result", "tool_use_id": part.call_id}
    shape = part.hints.get("content") if native else None
    blocks = encode_blocks(part.content, native)
    if shape == "str" and len(part.content) == 1 and plain_text(part.content[0]):
        out["content"] = blocks[0]["text"]
    elif blocks or (native and shape != "none"):
        out["content"] = blocks
    if part.is_error or (native and part.hints.get("is_error")):
        out["is_error"] = part.is_error
    return _finish(out, cache_json(part, native), part.extra if native else None)


def plain_text(part: Part) -> bool:
    """A text part with nothing but its text: one that a string content can stand for."""
    return isinstance(part, Text) and part.cache is None and not part.extra


def _encode_image(part: Image, native: bool) -> Json:
    """Inline images travel as a base64 source, ``data:`` URLs from another wire included;
    other URLs as a URL source. ``detail`` has no place on this wire and is left out."""
    data, media_type, url = part.data, part.media_type, part.url
    if data is None and url is not None and url.startswith("data:") and not native:
        media_type, data = _data_url(url)
    if data is not None:
        if media_type is None:
            raise ProtocolError("an inline image needs a media type on anthropic-messages")
        source: Json = {"type": "base64", "media_type": media_type, "data": data}
    elif url is not None:
        source = {"type": "url", "url": url}
    else:
        raise ProtocolError("an image needs a URL or inline data")
    out: Json = {"type": "image", "source": source}
    return _finish(out, cache_json(part, native), part.extra if native else None)


def _data_url(url: str) -> tuple[str, str]:
    """RFC 2397: ``data:<media type>;base64,<data>``; only base64 payloads fit this wire."""
    head, sep, data = url[5:].partition(",")
    media_type, _, encoding = head.partition(";")
    if not sep or encoding != "base64" or not media_type:
        raise ProtocolError("an image data URL must be base64 with a media type")
    return media_type, data


def _encode_reasoning(part: Reasoning, native: bool) -> Json | None:
    """Thinking with a signature becomes ``thinking``, redacted reasoning ``redacted_thinking``.

    The origin of a signature is not recorded, so one from another provider is sent as is and
    will be refused upstream. Reasoning from another wire with no (or an empty) signature, a
    summary from a wire that shares none, cannot be replayed and is left out; this wire's own
    unsigned thinking block re-emits exactly here (a request leaves it out before: see
    ``request.unsigned``)."""
    if part.redacted:
        if part.signature is None:
            return None
        out: Json = {"type": "redacted_thinking", "data": part.signature}
    elif not part.signature and not native:
        return None
    else:
        out = {"type": "thinking", "thinking": part.text}
        if part.signature is not None:
            out["signature"] = part.signature
    return merged(out, part.extra) if native else out


def encode_opaque(part: Opaque) -> Json:
    if part.wire is not WIRE:
        kind = part.data.get("type", "item")
        raise ProtocolError(f"a {part.wire.value} {kind} item cannot be sent on {WIRE.value}")
    return part.data


def _finish(out: Json, cache: Json | None, extra: Json | None) -> Json:
    if cache is not None:
        out["cache_control"] = cache
    return merged(out, extra) if extra else out
