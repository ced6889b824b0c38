"""Message ``content`` on the Chat wire: a string, null, or a list of typed parts.

Modelled parts: ``text`` -> ``Text`` and ``image_url`` -> ``Image`` (a ``data:`` URL in its
exact base64 form becomes ``Image.data`` plus ``media_type``, any other URL stays
``Image.url``). Every other part type (``input_audio``, ``file``, ``refusal``...) becomes an
``Opaque`` part of this wire, re-emitted exactly.

``extra`` mirrors the wire object minus the modelled keys: for an image, the unknown keys of
the part plus ``{"image_url": {unknown keys of image_url}}`` when there are any. The shape of
``content`` (``string``, ``list``, ``null`` or ``absent``) is kept in the message's hints.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from skillstate.conversation import Image, Json, Opaque, Part, ProtocolError, Text, Wire
from skillstate.protocols.fields import (
    at,
    need_object,
    need_text_or_list,
    optional_str,
    required_object,
    required_str,
    without,
)
from skillstate.protocols.openai_chat.nulls import note_nulls, nulls_of, put, sent_null

_DATA_URL = re.compile(r"data:([A-Za-z0-9.+/-]+);base64,(.*)", re.DOTALL)


def decode_content(raw: Json, path: str) -> tuple[list[Part], str]:
    """The parts of ``raw["content"]`` and the content's shape."""
    if "content" not in raw:
        return [], "absent"
    value = raw["content"]
    if value is None:
        return [], "null"
    if isinstance(value, str):
        return [Text(value)], "string"
    items = need_text_or_list(value, at(path, "content"), "content parts")
    base = at(path, "content")
    return [decode_part(item, at(base, i)) for i, item in enumerate(items)], "list"


def decode_part(raw: Any, path: str) -> Part:
    part = need_object(raw, path)
    kind = required_str(part, "type", path)
    if kind == "text":
        text = required_str(part, "text", path)
        return Text(text, extra=without(part, "type", "text"))
    if kind == "image_url":
        return _decode_image(part, path)
    return Opaque(Wire.CHAT, part)


def _decode_image(part: Json, path: str) -> Image:
    inner = required_object(part, "image_url", path)
    inner_path = at(path, "image_url")
    url = required_str(inner, "url", inner_path)
    detail = optional_str(inner, "detail", inner_path)
    extra = without(part, "type", "image_url")
    inner_extra = without(inner, "url", "detail")
    if inner_extra:
        extra["image_url"] = inner_extra
    hints = note_nulls({}, sent_null(inner, ("detail",)))
    match = _DATA_URL.fullmatch(url)
    if match is None:
        return Image(url=url, detail=detail, extra=extra, hints=hints)
    media_type, data = match.groups()
    return Image(data=data, media_type=media_type, detail=detail, extra=extra, hints=hints)


def encode_part(part: Part, native: bool) -> Json:
    """One content part; ``native`` re-emits this wire's ``extra`` and hints."""
    if isinstance(part, Text):
        out: Json = {"type": "text", "text": part.text}
        return {**part.extra, **out} if native else out
    if isinstance(part, Image):
        return _encode_image(part, native)
    if isinstance(part, Opaque):
        return opaque_data(part)
    raise ProtocolError(f"a {type(part).__name__} part cannot be message content on this wire")


def opaque_data(part: Opaque) -> Json:
    """An Opaque part is this wire's own JSON; one from another wire (a ``document``, or a
    ``tool_reference`` inside a tool result) cannot be carried, and is named in the refusal."""
    if part.wire is not Wire.CHAT:
        kind = part.data.get("type")
        what = f"a {kind} item" if isinstance(kind, str) else "an item"
        raise ProtocolError(f"{what} of the {part.wire} wire cannot be sent on the Chat wire")
    return part.data


def _encode_image(image: Image, native: bool) -> Json:
    if image.data is not None:
        url = f"data:{image.media_type or 'application/octet-stream'};base64,{image.data}"
    elif image.url is not None:
        url = image.url
    else:
        raise ProtocolError("an image needs a URL or inline data")
    extra = image.extra if native else {}
    inner: Json = {**extra.get("image_url", {}), "url": url}
    put(inner, "detail", image.detail, nulls_of(image.hints) if native else ())
    return {**without(extra, "image_url"), "type": "image_url", "image_url": inner}


def encode_content(
    parts: Sequence[Part], shape: str | None, native: bool, *, empty: str | None
) -> tuple[bool, Any]:
    """(present, value) of ``content`` for ``parts``.

    ``shape`` is the original shape when known. Without it a single plain text becomes a
    string, no part at all becomes ``empty`` (``None`` beside tool calls, else ``""``), and
    anything else a list."""
    if not parts:
        if shape is None:
            return True, empty
        return shape != "absent", {"null": None, "string": "", "list": []}.get(shape)
    if shape in ("string", None) and len(parts) == 1 and _plain_text(parts[0], native):
        return True, parts[0].text  # type: ignore[union-attr]
    return True, [encode_part(part, native) for part in parts]


def _plain_text(part: Part, native: bool) -> bool:
    return isinstance(part, Text) and (not native or not part.extra)
