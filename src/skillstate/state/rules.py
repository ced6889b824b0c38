"""Σ ⊕ patch by the schema's rules: how each key's new value combines with the one Σ holds.

A schema gives each value a ``Rule`` (``state.schema``). ``replace`` is JSON Merge Patch (RFC
7386, ``merge.merge``): a value replaces, an object's members each combine by their own
shape's rule, ``null`` deletes. The others keep what Σ learned, whatever a patch says:
``append`` adds an array's items at its end; ``union`` adds the items an array does not hold
yet, or an object's entries (updating those it has, by their own rule), and deletes nothing;
``sum`` adds a number; ``max`` keeps the larger; ``set_once`` keeps the first value. What a
rule refuses (a ``null`` where nothing may be deleted, a second value of a ``set_once``) is
left out and said (an ``Issue`` among the dropped), the rest of the patch applied.

The laws each rule keeps (tests/state/test_merge_rules.py): with ``replace`` everywhere this is
``merge`` exactly; ``union`` is idempotent and never loses a key or item; ``append`` and
``sum`` are associative (two patches in a row are one patch of both); ``max`` is idempotent
and commutative; a ``set_once`` value is never overwritten.

Key order is kept as ``merge`` keeps it (Σ's keys in their places, new ones after, in the
patch's order), so a rendered Σ stays byte-identical across unrelated patches. The result
shares no list or dict with either input. Values are checked first (``validation``): types
fit their shapes, and an array holds no ``null``.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation.model import Json
from skillstate.state.schema import Rule, Shape, StateSchema
from skillstate.state.validation import Issue, Path

_FREE = Shape()
"""The shape of a value the schema says nothing of: any JSON, replaced."""
_ABSENT = object()
"""Σ holds no value for the key."""


def combine(schema: StateSchema, state: Json, patch: Json) -> tuple[Json, list[Issue]]:
    """``state`` with ``patch`` combined into it by the schema's rules, and what the rules
    left out of it (neither input is changed)."""
    left: list[Issue] = []
    return _object(schema.keys, None, state, patch, (), left), left


def _object(
    fields: Any, entries: Shape | None, base: Any, patch: Json, path: Path, left: list[Issue]
) -> Json:
    """An object's members, each by its shape (``fields`` by name, or ``entries`` for all)."""
    current: Json = base if isinstance(base, dict) else {}
    result: Json = {}

    def shape_of(key: str) -> Shape:
        if fields is not None:
            return fields.get(key) or _FREE
        return entries or _FREE

    for key, value in current.items():
        if key not in patch:
            result[key] = copy_json(value)
            continue
        out = _value(shape_of(key), value, patch[key], (*path, key), left)
        if out is not _ABSENT:
            result[key] = out
    for key, value in patch.items():
        if key not in current and value is not None:
            out = _value(shape_of(key), _ABSENT, value, (*path, key), left)
            if out is not _ABSENT:
                result[key] = out
    return result


def _value(shape: Shape, current: Any, value: Any, path: Path, left: list[Issue]) -> Any:
    """``value`` combined into ``current`` (``_ABSENT``: none) by ``shape``'s rule;
    ``_ABSENT`` where the result holds none."""
    rule = shape.rule
    if value is None:  # a deletion
        if rule is Rule.REPLACE or current is _ABSENT:
            return _ABSENT
        left.append(Issue(path, f"is kept by its {rule} rule: null does not delete it"))
        return copy_json(current)
    if current is _ABSENT:
        if isinstance(value, dict):  # its members by their own rules (a set_once one, too)
            return _object(shape.fields, shape.entries, None, value, path, left)
        return copy_json(value)
    if rule is Rule.SET_ONCE:
        if value != current:
            left.append(Issue(path, "is set once: it keeps its first value"))
        return copy_json(current)
    if rule is Rule.SUM and _number(current):
        return current + value
    if rule is Rule.MAX and _number(current):
        return max(current, value)
    if rule is Rule.APPEND and isinstance(current, list):
        return [*copy_json(current), *copy_json(value)]
    if rule is Rule.UNION and isinstance(current, list) and isinstance(value, list):
        out = copy_json(current)
        for item in value:
            if item not in out:
                out.append(copy_json(item))
        return out
    if isinstance(value, dict):
        if rule is Rule.UNION:
            return _union(shape, current, value, path, left)
        return _object(shape.fields, shape.entries, current, value, path, left)
    return copy_json(value)


def _union(shape: Shape, current: Any, value: Json, path: Path, left: list[Issue]) -> Json:
    """An object's ``union``: its entries added or updated, none deleted."""
    kept: Json = {}
    for key, item in value.items():
        if item is None and isinstance(current, dict) and key in current:
            left.append(Issue((*path, key), "is kept by the union rule: null does not delete it"))
        elif item is not None:
            kept[key] = item
    return _object(shape.fields, shape.entries, current, kept, path, left)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (objects and arrays copied, scalars shared)."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value
