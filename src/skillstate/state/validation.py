"""Checking a patch against Σ's schema, before it is merged.

The checker walks the patch once and sorts what it finds into two lists: members to *drop*
(keys outside the schema, fields a record does not name: reported, not fatal) and reasons to
*reject* (a type mismatch, a value outside its choices, a reserved or over-long key, ``null``
inside an array, something JSON cannot carry). Bounds on depth and size are measured by
``depth_of`` and ``size_of``; ``merge.apply_patch`` decides what to do with all of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from skillstate.conversation.model import Json
from skillstate.state.schema import (
    RESERVED_KEYS,
    RULE_KINDS,
    JsonKind,
    Shape,
    StateSchema,
    fits,
    kind_of,
)
from skillstate.support import jsonio

Path = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Issue:
    """One finding about a patch: where it is (``path`` from Σ's top) and why."""

    path: Path
    reason: str

    @property
    def pointer(self) -> str:
        """``path`` as an RFC 6901 JSON Pointer (``~`` is written ``~0`` and ``/`` ``~1``)."""
        return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in self.path)

    def __str__(self) -> str:
        return f"{self.pointer or 'the patch'}: {self.reason}"


def depth_of(value: object, limit: int) -> int:
    """The nesting depth of ``value`` (a scalar is 1, a container 1 + its deepest item),
    counted no further than ``limit + 1``: a hostile value cannot make this recurse deeply."""
    deepest = 1
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest


def size_of(value: object) -> int | None:
    """Bytes of ``value`` as compact JSON, or ``None`` if it cannot be written as JSON."""
    try:
        return len(jsonio.dumps(value))
    except (TypeError, ValueError):
        return None


@dataclass(slots=True)
class Checked:
    """The patch with dropped members removed, and what the walk found."""

    patch: Json
    dropped: list[Issue] = field(default_factory=list)
    rejected: list[Issue] = field(default_factory=list)


def check_patch(schema: StateSchema, state: Json, patch: Json) -> Checked:
    """Check ``patch`` (a dict already bounded in depth) against ``schema`` and ``state``.

    A top-level key outside the schema is dropped. A key whose type is inferred takes the
    type of ``state``'s value for it, if any; ``null`` (delete) is always allowed for a
    top-level key and for an object member.
    """
    walk = _Walk(schema.bounds.max_key_length)
    kept: Json = {}
    for key, value in patch.items():
        if not walk.key_ok(key, (key,)):
            continue
        shape = schema.shape(key)
        if shape is None:
            walk.dropped.append(Issue((key,), "is not a key of the state schema; dropped"))
            continue
        combined, kind = RULE_KINDS.get(shape.rule), kind_of(value)
        if shape.kind is None and combined and kind is not None and kind not in combined:
            kinds = " or ".join(_article(k) for k in combined)
            walk.reject(
                (key,), f"is combined by the {shape.rule} rule: {kinds}, not {_article(kind)}"
            )
            continue
        kept[key] = walk.value(_inferred(shape, state.get(key)), value, (key,))
    return Checked(kept, walk.dropped, walk.rejected)


def _inferred(shape: Shape, current: object) -> Shape:
    """``shape``, with an inferred key's type taken from its current value (a number, if an
    integer: a count may later become a fraction)."""
    if shape.kind is not None or current is None:
        return shape
    kind = kind_of(current)
    if kind is JsonKind.INTEGER:
        kind = JsonKind.NUMBER
    combined = RULE_KINDS.get(shape.rule)
    if kind is None or (combined is not None and kind not in combined):
        return shape  # a value its rule does not combine (check_patch refuses such values)
    return replace(shape, kind=kind)


@dataclass(slots=True)
class _Walk:
    max_key_length: int
    dropped: list[Issue] = field(default_factory=list)
    rejected: list[Issue] = field(default_factory=list)

    def reject(self, path: Path, reason: str) -> None:
        self.rejected.append(Issue(path, reason))

    def key_ok(self, key: object, path: Path) -> bool:
        if not isinstance(key, str):
            self.reject(path[:-1], f"has the key {key!r}; JSON keys are strings")
            return False
        if key in RESERVED_KEYS:
            self.reject(path, "is a reserved key name")
            return False
        if len(key) > self.max_key_length:
            self.reject(path, f"key is longer than {self.max_key_length} characters")
            return False
        return True

    def value(self, shape: Shape | None, value: Any, path: Path) -> Any:
        """``value`` checked against ``shape`` (``None``: any JSON), dropped members removed."""
        if value is None:
            return None
        kind = kind_of(value)
        if kind is None:
            self.reject(path, f"holds {value!r}, which is not a JSON value")
            return value
        declared = shape.kind if shape is not None else None
        if declared is not None and not fits(declared, kind):
            self.reject(path, f"must be {_article(declared)}, not {_article(kind)}")
            return value
        if kind is JsonKind.STRING and shape is not None:
            self.string(shape, value, path)
        elif kind is JsonKind.OBJECT:
            return self.members(shape, value, path)
        elif kind is JsonKind.ARRAY:
            return self.items(shape.items if shape is not None else None, value, path)
        return value

    def string(self, shape: Shape, value: str, path: Path) -> None:
        if shape.choices and value not in shape.choices:
            self.reject(path, f"must be one of {'|'.join(shape.choices)}, not {value!r}")
        if shape.one_line and ("\n" in value or "\r" in value):
            self.reject(path, "must be a single line")

    def members(self, shape: Shape | None, value: dict[Any, Any], path: Path) -> Json:
        kept: Json = {}
        for key, item in value.items():
            where = (*path, key)
            if not self.key_ok(key, where):
                continue
            if shape is not None and shape.fields is not None:
                if key not in shape.fields:
                    named = ", ".join(shape.fields)
                    self.dropped.append(Issue(where, f"is not one of {named}; dropped"))
                    continue
                kept[key] = self.value(shape.fields[key], item, where)
            else:
                kept[key] = self.value(shape.entries if shape else None, item, where)
        return kept

    def items(self, shape: Shape | None, value: list[Any], path: Path) -> list[Any]:
        """An array replaces whole, so nothing in it deletes: a null anywhere inside it, an
        object member's included, would be stored as a null and is refused."""
        checked = []
        for index, item in enumerate(value):
            if item is None or _holds_null(item):
                self.reject((*path, index), "holds null; null only deletes, arrays cannot hold it")
            checked.append(self.value(shape, item, (*path, index)))
        return checked


def _holds_null(value: object) -> bool:
    if isinstance(value, dict):
        return any(item is None or _holds_null(item) for item in value.values())
    if isinstance(value, list):
        return any(item is None or _holds_null(item) for item in value)
    return False


def _article(kind: JsonKind) -> str:
    return (
        f"an {kind}" if kind in (JsonKind.ARRAY, JsonKind.OBJECT, JsonKind.INTEGER) else f"a {kind}"
    )
