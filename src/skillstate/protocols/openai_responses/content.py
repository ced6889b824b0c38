"""Content parts of message items and tool outputs: ``input_text`` / ``output_text`` /
``refusal`` are ``Text``, ``input_image`` with an ``image_url`` is an ``Image``, anything else
(``input_file``, an image by ``file_id`` only, audio...) is kept whole as ``Opaque``.

A base64 data URL is split into ``data`` and ``media_type`` (what other wires carry inline) and
rebuilt the same way. Hints: ``type`` (the content part's type, so a refusal or an
``input_text`` inside an assistant message comes back as it was), ``no_detail`` (the image had
no ``detail`` key).
"""

from __future__ import annotations

import re

from skillstate.conversation import Image, Json, Opaque, Part, ProtocolError, Text, Wire
from skillstate.protocols.fields import need_object, optional_str, required_str, without

_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.DOTALL)
_TEXT_TYPES = ("input_text", "output_text")


def decode_part(part: object, path: str) -> Text | Image | Opaque:
    """One content part. Text kinds and URL images are modelled; the rest is kept whole."""
    body = need_object(part, path)
    kind = required_str(body, "type", path)
    if kind in _TEXT_TYPES:
        value = required_str(body, "text", path)
        return Text(value, extra=without(body, "type", "text"), hints={"type": kind})
    if kind == "refusal":
        value = required_str(body, "refusal", path)
        return Text(value, extra=without(body, "type", "refusal"), hints={"type": kind})
    if kind == "input_image":
        return _decode_image(body, path)
    return Opaque(Wire.RESPONSES, body)


def _decode_image(body: Json, path: str) -> Image | Opaque:
    url = optional_str(body, "image_url", path)
    detail = optional_str(body, "detail", path)
    if url is None:
        return Opaque(Wire.RESPONSES, body)
    hints: Json = {} if "detail" in body else {"no_detail": True}
    extra = without(body, "type", "image_url", "detail")
    match = _DATA_URL.fullmatch(url)
    if match is None:
        return Image(url=url, detail=detail, extra=extra, hints=hints)
    return Image(data=match[2], media_type=match[1], detail=detail, extra=extra, hints=hints)


def encode_part(part: Part, *, own: bool, default: str) -> Json:
    """One content part; ``own`` re-emits this wire's extra and hints, ``default`` is the text
    type for a text without hints (``output_text`` in assistant messages, else ``input_text``)."""
    if isinstance(part, Text):
        return encode_text(part, own=own, default=default)
    if isinstance(part, Image):
        return encode_image(part, own=own)
    if isinstance(part, Opaque):
        return opaque_data(part)
    raise ProtocolError(f"A {type(part).__name__} part cannot be message content on this wire.")


def encode_text(part: Text, *, own: bool, default: str) -> Json:
    if not own:
        return {"type": default, "text": part.text}
    kind = part.hints.get("type", default)
    key = "refusal" if kind == "refusal" else "text"
    return {"type": kind, key: part.text, **part.extra}


def encode_image(part: Image, *, own: bool) -> Json:
    if part.url is not None:
        url = part.url
    elif part.data is not None:
        url = f"data:{part.media_type or 'image/png'};base64,{part.data}"
    else:
        raise ProtocolError("An image needs a URL or inline data on this wire.")
    if not own:
        return {"type": "input_image", "image_url": url, "detail": part.detail or "auto"}
    body: Json = {"type": "input_image", "image_url": url}
    if part.detail is not None or not part.hints.get("no_detail"):
        body["detail"] = part.detail
    return {**body, **part.extra}


def opaque_data(part: Opaque) -> Json:
    """An Opaque part is this wire's own JSON; one from another wire (a ``document``, or a
    ``tool_reference`` inside a tool result) cannot be carried, and is named in the refusal."""
    if part.wire is not Wire.RESPONSES:
        kind = part.data.get("type")
        what = f"A {kind} item" if isinstance(kind, str) else "An item"
        raise ProtocolError(
            f"{what} of the {part.wire.value} wire has no equivalent on the Responses wire."
        )
    return part.data
