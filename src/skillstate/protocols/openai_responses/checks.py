"""Type checks on incoming Responses JSON, each failing with a ``ProtocolError`` that names the
offending field by its JSON path (``input[3].content[0].text``), as the API itself does."""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, ProtocolError

_JSON_TYPES: dict[type | tuple[type, ...], str] = {
    str: "a string",
    bool: "a boolean",
    dict: "an object",
    list: "an array",
}


def fail(path: str, message: str) -> ProtocolError:
    return ProtocolError(f"Invalid '{path}': {message}.", status=400, param=path)


def obj(value: Any, path: str) -> Json:
    if not isinstance(value, dict):
        raise fail(path, "expected an object")
    return value


def array(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise fail(path, "expected an array")
    return value


def text(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise fail(path, "expected a string")
    return value


def field(body: Json, key: str, kind: type, path: str, *, required: bool = False) -> Any:
    """``body[key]`` if it is of JSON type ``kind`` (or null/absent when not required)."""
    if key not in body:
        if required:
            raise fail(f"{path}.{key}" if path else key, "missing required parameter")
        return None
    value = body[key]
    if value is None and not required:
        return None
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        where = f"{path}.{key}" if path else key
        raise fail(where, f"expected {_JSON_TYPES.get(kind, kind.__name__)}")
    return value


def number(body: Json, key: str, path: str = "") -> float | int | None:
    """An optional JSON number (booleans are not numbers here, unlike in Python)."""
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(f"{path}.{key}" if path else key, "expected a number")
    return value


def integer(body: Json, key: str, path: str = "") -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(f"{path}.{key}" if path else key, "expected an integer")
    return value


def without(body: Json, *keys: str) -> Json:
    """A shallow copy of ``body`` without ``keys`` (the wire fields the model names)."""
    return {k: v for k, v in body.items() if k not in keys}
