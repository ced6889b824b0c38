"""Canonical messages to plain JSON values and back, exactly.

An archived span must come back as the very messages that were collapsed, ``extra`` and
``hints`` included, so that a restored turn re-encodes to the bytes the client sent. The form:

* a message is ``{"role": ..., "parts": [...]}`` plus ``extra`` and ``hints`` when not empty;
* a part is an object whose ``"type"`` names its class (see ``PART_TYPES``) and whose other keys
  are the dataclass fields of that class, under their Python names;
* a field equal to its default (``None``, ``False``, ``""``, ``{}``, ``"function"``...) is left
  out, so a field added later with a default leaves every existing form, and hash, unchanged;
* ``ToolResult.content`` is a list of parts in the same form (text, images and opaque items);
  ``Opaque.wire`` is the wire's value (``"openai-chat"``...);
* a cache marker is an object: ``{}`` for ``CacheMark()``, ``{"ttl": "1h"}`` with a ``ttl``.
  (Forms written before markers were ``CacheMark`` held the wire's marker object there; read
  back, its ``ttl`` is kept and its other keys are ignored.)

The values are left as they are (dicts, lists, strings, numbers of any size): ``hashing`` turns
them into bytes.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, fields
from typing import Any

from skillstate.conversation import (
    ArchiveRef,
    CacheMark,
    Image,
    Json,
    Message,
    Opaque,
    Part,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Wire,
)

#: The ``"type"`` tag of each part class. Changing a tag changes every archive hash.
PART_TYPES: dict[str, type[Part]] = {
    "text": Text,
    "image": Image,
    "tool_call": ToolCall,
    "tool_result": ToolResult,
    "reasoning": Reasoning,
    "opaque": Opaque,
    "archive_ref": ArchiveRef,
}
_TAGS: dict[type[Any], str] = {cls: tag for tag, cls in PART_TYPES.items()}
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


class SpanFormatError(ValueError):
    """Archived JSON that is not a span of canonical messages."""


def encode_message(message: Message) -> Json:
    """The JSON form of ``message`` (see the module docstring)."""
    out: Json = {"role": message.role, "parts": [encode_part(part) for part in message.parts]}
    if message.extra:
        out["extra"] = message.extra
    if message.hints:
        out["hints"] = message.hints
    return out


def encode_part(part: Part) -> Json:
    tag = _TAGS.get(type(part))
    if tag is None:
        raise TypeError(f"not a canonical part: {type(part).__name__}")
    out: Json = {"type": tag}
    for spec in fields(part):
        value = getattr(part, spec.name)
        if _is_default(spec, value):
            continue
        if isinstance(part, ToolResult) and spec.name == "content":
            value = [encode_part(item) for item in value]
        elif isinstance(value, CacheMark):
            value = {} if value.ttl is None else {"ttl": value.ttl}
        elif isinstance(value, Wire):
            value = value.value
        out[spec.name] = value
    return out


def decode_message(data: Any) -> Message:
    """The message ``encode_message`` made ``data`` from; ``SpanFormatError`` otherwise."""
    if not isinstance(data, dict):
        raise SpanFormatError("a message must be a JSON object")
    unknown = set(data) - {"role", "parts", "extra", "hints"}
    if unknown:
        raise SpanFormatError(f"unknown message keys: {sorted(unknown)}")
    role, parts = data.get("role"), data.get("parts")
    if role not in _ROLES:
        raise SpanFormatError(f"unknown role: {role!r}")
    if not isinstance(parts, list):
        raise SpanFormatError("a message's parts must be a list")
    return Message(
        role,
        [decode_part(item) for item in parts],
        extra=_object(data.get("extra", {}), "extra"),
        hints=_object(data.get("hints", {}), "hints"),
    )


def decode_part(data: Any) -> Part:
    if not isinstance(data, dict):
        raise SpanFormatError("a part must be a JSON object")
    values = dict(data)
    tag = values.pop("type", None)
    cls = PART_TYPES.get(tag) if isinstance(tag, str) else None
    if cls is None:
        raise SpanFormatError(f"unknown part type: {tag!r}")
    if cls is ToolResult and "content" in values:
        content = values["content"]
        if not isinstance(content, list):
            raise SpanFormatError("a tool result's content must be a list")
        values["content"] = [_result_item(item) for item in content]
    if values.get("cache") is not None:
        values["cache"] = _cache_mark(values["cache"])
    if cls is Opaque and "wire" in values:
        try:
            values["wire"] = Wire(values["wire"])
        except ValueError:
            raise SpanFormatError(f"unknown wire: {values['wire']!r}") from None
    try:
        part: Part = cls(**values)
    except TypeError as error:
        raise SpanFormatError(f"{tag} part: {error}") from None
    return part


def _cache_mark(data: Any) -> CacheMark:
    if not isinstance(data, dict):
        raise SpanFormatError("a cache marker must be a JSON object")
    ttl = data.get("ttl")
    if ttl is not None and not isinstance(ttl, str):
        raise SpanFormatError("a cache marker's ttl must be a string")
    return CacheMark(ttl)


def _result_item(data: Any) -> Text | Image | Opaque:
    item = decode_part(data)
    if not isinstance(item, Text | Image | Opaque):
        raise SpanFormatError(f"a tool result cannot hold a {type(item).__name__} part")
    return item


def _is_default(spec: Field[Any], value: Any) -> bool:
    if spec.default is not MISSING:
        # ``is`` first so that a default of False never hides a 0, nor 0 a False.
        return value is spec.default or (
            type(value) is type(spec.default) and value == spec.default
        )
    if spec.default_factory is not MISSING:
        return bool(value == spec.default_factory())
    return False


def _object(value: Any, name: str) -> Json:
    if not isinstance(value, dict):
        raise SpanFormatError(f"a message's {name} must be a JSON object")
    return value
