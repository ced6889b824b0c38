"""Reading wire JSON field by field: the one vocabulary every adapter checks bodies with.

A check that fails raises a ``ProtocolError`` (status 400) whose ``param`` is the JSON path at
fault (``messages[3].content[0].text``, ``""`` being the body itself) and whose message reads
``<path> must be a string`` or ``<path> is required``; the server turns it into an error body
of the client's wire. JSON types, not Python's: ``true`` is neither an integer nor a number.

The helpers come in three kinds, by what they are given:

* ``need_<type>(value, path)``: a value at hand must be of that type.
* ``required_<type>(body, key, path)``: ``body[key]`` must be present and of that type.
* ``optional_<type>(body, key, path)``: ``body[key]`` of that type, or None when the key is
  absent or null (a wire that must send a ``null`` back notes it itself).

Fields the model does not name travel in ``extra``: ``without`` and ``split_known`` set them
apart when decoding, ``merged`` puts them back when encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, TypeVar

from skillstate.conversation import Json, ProtocolError

_T = TypeVar("_T")


def at(path: str, key: str | int) -> str:
    """The JSON path of ``key`` (a field name or an array index) inside the value at ``path``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def fail(path: str, what: str) -> ProtocolError:
    """The error for the value at ``path``: ``raise fail("model", "must not be empty")``."""
    return ProtocolError(f"{path} {what}", status=400, param=path)


def need_object(value: Any, path: str) -> Json:
    if not isinstance(value, dict):
        raise fail(path, "must be an object")
    return value


def need_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise fail(path, "must be an array")
    return value


def need_text_or_list(value: Any, path: str, items: str) -> list[Any]:
    """The array of a field that may also be a string (read as a string before this): any
    other value fails naming both forms, ``must be a string or an array of {items}``."""
    if not isinstance(value, list):
        raise fail(path, f"must be a string or an array of {items}")
    return value


def need_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise fail(path, "must be a string")
    return value


def need_int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(path, "must be an integer")
    return value


def need_number(value: Any, path: str) -> float:
    """An integer or a float, kept as it came (an integer stays an integer)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(path, "must be a number")
    return value


def need_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise fail(path, "must be a boolean")
    return value


def need_str_list(value: Any, path: str) -> list[str]:
    """A copy of an array of strings."""
    return [need_str(item, at(path, i)) for i, item in enumerate(need_list(value, path))]


def _required(need: Callable[[Any, str], _T], body: Json, key: str, path: str) -> _T:
    if key not in body:
        raise fail(at(path, key), "is required")
    return need(body[key], at(path, key))


def required_str(body: Json, key: str, path: str = "") -> str:
    return _required(need_str, body, key, path)


def required_object(body: Json, key: str, path: str = "") -> Json:
    return _required(need_object, body, key, path)


def required_list(body: Json, key: str, path: str = "") -> list[Any]:
    return _required(need_list, body, key, path)


def _optional(need: Callable[[Any, str], _T], body: Json, key: str, path: str) -> _T | None:
    value = body.get(key)
    return None if value is None else need(value, at(path, key))


def optional_str(body: Json, key: str, path: str = "") -> str | None:
    return _optional(need_str, body, key, path)


def optional_int(body: Json, key: str, path: str = "") -> int | None:
    return _optional(need_int, body, key, path)


def optional_number(body: Json, key: str, path: str = "") -> float | None:
    return _optional(need_number, body, key, path)


def optional_bool(body: Json, key: str, path: str = "") -> bool | None:
    return _optional(need_bool, body, key, path)


def optional_object(body: Json, key: str, path: str = "") -> Json | None:
    return _optional(need_object, body, key, path)


def optional_list(body: Json, key: str, path: str = "") -> list[Any] | None:
    return _optional(need_list, body, key, path)


def optional_str_list(body: Json, key: str, path: str = "") -> list[str] | None:
    return _optional(need_str_list, body, key, path)


def without(body: Json, *keys: str) -> Json:
    """A shallow copy of ``body`` without ``keys`` (the fields the model names): its
    ``extra``."""
    return {k: v for k, v in body.items() if k not in keys}


def split_known(body: Json, known: Collection[str]) -> tuple[Json, Json]:
    """The known, non-null fields of ``body``, and everything else (its ``extra``, where a
    known field sent as null stays, so that it is sent back as null)."""
    got: Json = {}
    rest: Json = {}
    for key, value in body.items():
        if value is not None and key in known:
            got[key] = value
        else:
            rest[key] = value
    return got, rest


def merged(out: Json, extra: Json) -> Json:
    """``out`` with the fields of ``extra`` it does not set itself (order: ``out`` first)."""
    for key, value in extra.items():
        out.setdefault(key, value)
    return out
