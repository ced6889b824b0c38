"""Field access for Chat Completions bodies: type checks that name the JSON path at fault, and
the bookkeeping of keys sent as ``null``.

A key the client sent as ``null`` reads as ``None`` like an absent key, but re-encoding must
send the ``null`` back, so every decoder collects such keys in ``hints["null"]`` and every
encoder of the same wire calls ``put`` with them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any, NoReturn

from skillstate.conversation import Json, ProtocolError

Check = Callable[[Any], bool]


def fail(path: str, what: str) -> NoReturn:
    raise ProtocolError(f"{path} {what}", param=path)


def is_str(value: Any) -> bool:
    return isinstance(value, str)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def is_object(value: Any) -> bool:
    return isinstance(value, dict)


def is_list(value: Any) -> bool:
    return isinstance(value, list)


_WHAT: dict[Check, str] = {
    is_str: "a string",
    is_int: "an integer",
    is_number: "a number",
    is_bool: "a boolean",
    is_object: "an object",
    is_list: "an array",
}


def join(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)


def want(value: Any, check: Check, path: str) -> Any:
    """``value`` itself, or a 400 naming ``path`` when it fails ``check``."""
    if not check(value):
        fail(path, f"must be {_WHAT[check]}")
    return value


def required(obj: Json, key: str, check: Check, path: str) -> Any:
    if key not in obj:
        fail(join(path, key), "is required")
    return want(obj[key], check, join(path, key))


def optional(obj: Json, key: str, check: Check, path: str, nulls: set[str]) -> Any:
    """The value of an optional key, or None when absent or null (null is noted in ``nulls``)."""
    value = obj.get(key)
    if value is None:
        if key in obj:
            nulls.add(key)
        return None
    return want(value, check, join(path, key))


def rest(obj: Json, known: Collection[str]) -> Json:
    """The keys of ``obj`` the model does not name: they travel in ``extra``."""
    return {k: v for k, v in obj.items() if k not in known}


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
