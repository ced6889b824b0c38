"""Reading wire objects field by field, with errors that name the JSON path.

A convention every module of this adapter follows: a known optional field sent as ``null`` is
unset in the canonical model and stays in ``extra`` as ``null``, so an untouched object
re-emits it, and a value a lane sets later simply overrides it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from skillstate.conversation import Json, ProtocolError


def split(obj: Json, known: Collection[str]) -> tuple[Json, Json]:
    """The known, non-null fields of ``obj``, and everything else (its ``extra``)."""
    got: Json = {}
    rest: Json = {}
    for key, value in obj.items():
        if value is not None and key in known:
            got[key] = value
        else:
            rest[key] = value
    return got, rest


def at(path: str, key: str) -> str:
    """The JSON path of ``key`` inside the object at ``path`` (``""`` is the body itself)."""
    return f"{path}.{key}" if path else key


def fail(path: str, what: str) -> ProtocolError:
    return ProtocolError(f"{path} {what}", status=400, param=path)


def need_obj(value: Any, path: str) -> Json:
    if not isinstance(value, dict):
        raise fail(path, "must be an object")
    return value


def need_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise fail(path, "must be an array")
    return value


def need_str(got: Json, key: str, path: str) -> str:
    value = got.get(key)
    if not isinstance(value, str):
        raise fail(at(path, key), "must be a string")
    return value


def opt_str(got: Json, key: str, path: str) -> str | None:
    return None if key not in got else need_str(got, key, path)


def opt_obj(got: Json, key: str, path: str) -> Json | None:
    return None if key not in got else need_obj(got[key], at(path, key))


def opt_int(got: Json, key: str, path: str) -> int | None:
    value = got.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(at(path, key), "must be an integer")
    return value


def opt_number(got: Json, key: str, path: str) -> float | None:
    value = got.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(at(path, key), "must be a number")
    return value


def opt_bool(got: Json, key: str, path: str) -> bool | None:
    value = got.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise fail(at(path, key), "must be a boolean")
    return value


def opt_str_list(got: Json, key: str, path: str) -> list[str] | None:
    value = got.get(key)
    if value is None:
        return None
    items = need_list(value, at(path, key))
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise fail(f"{at(path, key)}[{i}]", "must be a string")
    return list(items)


def merged(out: Json, extra: Json) -> Json:
    """``out`` with the fields of ``extra`` it does not set itself (order: ``out`` first)."""
    for key, value in extra.items():
        out.setdefault(key, value)
    return out
