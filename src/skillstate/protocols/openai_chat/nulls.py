"""Keys of a Chat Completions body sent as ``null``.

A key the client sent as ``null`` reads as ``None`` like an absent key (``fields.optional_*``),
but re-encoding must send the ``null`` back, so every decoder of this wire notes such keys in
``hints["null"]`` and every encoder of it writes them with ``put``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from skillstate.conversation import Json


def sent_null(obj: Json, keys: Iterable[str]) -> set[str]:
    """Those of ``keys`` that ``obj`` holds as null."""
    return {key for key in keys if key in obj and obj[key] is None}


def note_nulls(hints: Json, nulls: Iterable[str]) -> Json:
    ordered = sorted(nulls)
    if ordered:
        hints["null"] = ordered
    return hints


def nulls_of(hints: Json) -> Collection[str]:
    found: list[str] = hints.get("null", [])
    return found


def put(out: Json, key: str, value: Any, nulls: Collection[str]) -> None:
    """Set ``key`` when ``value`` is given, or to null when the original sent null."""
    if value is not None:
        out[key] = value
    elif key in nulls:
        out[key] = None
