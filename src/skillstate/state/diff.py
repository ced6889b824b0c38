"""Σ changes between two states, as the JSON Merge Patch that makes one from the other.

Hybrid mode freezes a Σ snapshot in the prefix of every request of an epoch, so the prefix
stays byte-identical while the model keeps patching Σ. What changed since the snapshot travels
in the small tail note instead, as the patch ``state_changes(snapshot, current)``: applied to
the snapshot with ``merge`` it gives the current Σ back, which is how the model reads it.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation.model import Json
from skillstate.state.rules import copy_json


def state_changes(snapshot: Json, current: Json) -> Json:
    """The RFC 7386 merge patch that turns ``snapshot`` into ``current``.

    Keys whose value changed or that ``current`` added carry the new value; keys ``current``
    removed are ``null``; where both sides hold an object for a key the patch recurses into it
    (so one changed entry of ``files`` is one entry of the patch); anything else (arrays,
    scalars, an object replacing a scalar) is sent whole. Values are compared as JSON, so
    ``true`` replacing ``1`` is a change. Unchanged keys are left out: two equal states give
    ``{}``. Holds ``merge(snapshot, state_changes(snapshot, current)) == current`` for every Σ
    (Σ never holds ``null``, the one value a merge patch cannot set). Neither input is mutated
    and the patch shares nothing with them.
    """
    patch: Json = {}
    for key in snapshot:
        if key not in current:
            patch[key] = None
    for key, new in current.items():
        if key not in snapshot:
            patch[key] = copy_json(new)
            continue
        old = snapshot[key]
        if isinstance(old, dict) and isinstance(new, dict):
            inner = state_changes(old, new)
            if inner:
                patch[key] = inner
        elif not same_json(old, new):
            patch[key] = copy_json(new)
    return patch


def same_json(left: Any, right: Any) -> bool:
    """Whether two values are the same JSON value: Python's ``True == 1 == 1.0`` is not."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same_json(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(
            same_json(a, b) for a, b in zip(left, right, strict=True)
        )
    return bool(left == right)
