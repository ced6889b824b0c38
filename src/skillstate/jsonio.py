"""JSON in and out, fast and exact, and safe on hostile input.

orjson is several times faster than the standard library but reads integers beyond 64 bits as
floats, which would corrupt a client's ids or seeds if the request is re-encoded. A body with a
run of 19 or more digits is therefore read again by the standard library, after orjson has
checked it.

The reader's contract (what ``loads`` accepts is exactly what ``dumps`` can always write back):

* RFC 8259 JSON in UTF-8; orjson's checks hold on both paths: no lone surrogates (escaped or
  raw), no ``NaN``/``Infinity``, no number that overflows a double;
* at most ``MAX_DEPTH`` levels of nested arrays and objects. orjson's writer stops at 254
  levels and the standard library's at Python's recursion limit; a translated request may
  place a client's value a few levels deeper than it came, hence the margin.

Every refusal is a ``ValueError`` (orjson's ``JSONDecodeError`` is one), never a
``RecursionError`` or a ``UnicodeError``.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

MAX_DEPTH = 128
"""The deepest nesting of arrays and objects ``loads`` accepts (``[[1]]`` is 2 levels)."""

_WRITER_DEPTH = 254
"""orjson's writer refuses values nested deeper than this."""

# Every digit becomes "0", so a run of 19 digits is a run of 19 zeros: two C-speed passes,
# where a regular expression would try a match at every digit (ten times slower).
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19


class TooDeep(ValueError):
    """A document nested deeper than ``MAX_DEPTH`` levels; its text reads after a subject
    ("request body nests deeper than 128 levels")."""


def loads(raw: bytes | str) -> Any:
    """Read one JSON document; a ``ValueError`` names what is wrong with it."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    value = orjson.loads(data)
    if isinstance(value, list | dict) and _too_deep(value):
        raise TooDeep(f"nests deeper than {MAX_DEPTH} levels")
    if _LONG_RUN in data.translate(_DIGITS_TO_ZERO):
        # orjson accepted it, so this can only differ in the integers it keeps exact.
        try:
            return json.loads(data)
        except RecursionError:  # a deep stack at the call site; the depth itself is checked
            raise TooDeep("nests too deeply to read here") from None
    return value


def _too_deep(value: list[Any] | dict[str, Any]) -> bool:
    """Whether ``value`` nests deeper than ``MAX_DEPTH``: orjson's writer, which stops at
    ``_WRITER_DEPTH`` levels, is asked to write it under enough extra levels to reach that
    stop only when it is too deep. One C-speed pass, where a walk in Python costs several
    times more. The parsed value holds no integer orjson cannot write (it read those as
    floats), so the depth is the only reason it can fail."""
    probe: Any = value
    for _ in range(_WRITER_DEPTH - MAX_DEPTH):
        probe = [probe]
    try:
        orjson.dumps(probe)
    except orjson.JSONEncodeError:
        return True
    return False


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON. Falls back to the standard library for integers orjson refuses.

    Anything ``loads`` returned, and anything built from it, is written. A lone surrogate in
    a string built elsewhere is written as its JSON escape (``\\ud800``), never raised as a
    ``UnicodeEncodeError``; a value too deep for the standard library raises ``TooDeep``."""
    try:
        return orjson.dumps(value)
    except TypeError:
        pass
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        raise TooDeep("nests too deeply to write as JSON") from None
    # A lone surrogate can only sit inside a string, where "\udXXX" is its JSON escape.
    return text.encode("utf-8", "backslashreplace")


def dumps_str(value: Any) -> str:
    return dumps(value).decode()
