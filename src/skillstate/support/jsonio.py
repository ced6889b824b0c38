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

import asyncio
import json
from collections.abc import Generator
from typing import Any

import orjson

from skillstate.support import longstrings

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
    if len(data) >= _SLICE_BYTES:
        return run(reading(data))
    # ``reading`` without its steps: most documents are short, and a step costs more than
    # the rest of reading one.
    value = orjson.loads(data)
    if isinstance(value, list | dict) and _may_nest(data, MAX_DEPTH) and _too_deep(value):
        raise TooDeep(f"nests deeper than {MAX_DEPTH} levels")
    if _LONG_RUN in data.translate(_DIGITS_TO_ZERO):
        return _standard(data)
    return value


def run(steps: Generator[None, None, Any]) -> Any:
    """What a generator of steps (``reading``, ``splice``) returns, run in one go."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


async def run_cooperatively(steps: Generator[None, None, Any]) -> Any:
    """``run``, letting the event loop run other work between the steps."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        await asyncio.sleep(0)


async def loads_cooperatively(raw: bytes | str) -> Any:
    """``loads``, letting the event loop run other work between its steps: reading a body of
    many megabytes takes tens of milliseconds, which would otherwise all fall on whatever
    other client is waiting."""
    return await run_cooperatively(reading(raw))


_SLICE_BYTES = 1024 * 1024
"""The exact-integer check looks at this much of a document per step."""


CUT_FROM = 4 * 1024 * 1024
"""Documents this long or longer are looked through for long strings to read in pieces
(``longstrings``); a shorter one takes orjson a few milliseconds whole, less than looking it
through, cutting and putting back would cost (an agent history of a few megabytes of short
strings gains nothing from the cut)."""


def reading(raw: bytes | str, max_depth: int = MAX_DEPTH) -> Generator[None, None, Any]:
    """The steps of ``loads``: it yields between them, and returns the value. ``max_depth``:
    for a piece of a document read on its own (``splice``), the levels left to it."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    cut = (yield from longstrings.read(data)) if len(data) >= CUT_FROM else None
    if cut is not None:
        try:
            value = orjson.loads(cut[0])
        except orjson.JSONDecodeError:
            cut = None  # read whole below, for orjson's own word on what is wrong
    if cut is None:
        value = orjson.loads(data)
    else:
        data = cut[0]  # the integer check looks at the skeleton: the rest is strings
    yield
    if (
        isinstance(value, list | dict)
        and _may_nest(data, max_depth)
        and _too_deep(value, max_depth)
    ):
        raise TooDeep(f"nests deeper than {max_depth} levels")
    value = yield from _exact_integers(data, value)
    if cut is not None:
        value = yield from longstrings.put_back(value, cut[1])
    return value


def _exact_integers(data: bytes, value: Any) -> Generator[None, None, Any]:
    """``value``, read again by the standard library if ``data`` holds a run of digits long
    enough to be an integer orjson read as a float."""
    # Slices overlap by a run's length less one, so that no run is cut in two.
    overlap = len(_LONG_RUN) - 1
    for start in range(0, max(1, len(data) - overlap), _SLICE_BYTES):
        yield
        if _LONG_RUN in data[start : start + _SLICE_BYTES + overlap].translate(_DIGITS_TO_ZERO):
            break
    else:
        return value
    return _standard(data)


def _standard(data: bytes) -> Any:
    """``data`` read by the standard library, which keeps every integer exact (orjson
    accepted it, so this can only differ in those)."""
    try:
        return json.loads(data)
    except RecursionError:  # a deep stack at the call site; the depth itself is checked
        raise TooDeep("nests too deeply to read here") from None


def _may_nest(data: bytes, max_depth: int) -> bool:
    """Whether ``data`` holds enough opening brackets to nest deeper than ``max_depth`` (each
    level opens one; those inside strings are counted too): most bodies do not, and two
    C-speed counts rule the walk out."""
    return data.count(b"[") + data.count(b"{") > max_depth


_WALK_BUDGET = 2_000
"""How many values the depth check visits in Python before it hands over to orjson."""


def _too_deep(value: list[Any] | dict[str, Any], max_depth: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests deeper than ``max_depth``. A walk costs little for the usual
    body (a few thousand values, some of them long strings) and grows with the number of
    values; past ``_WALK_BUDGET`` of them, orjson's writer decides instead, in one C-speed
    pass that grows with the bytes: it stops at ``_WRITER_DEPTH`` levels, so it is asked to
    write the value under enough extra levels to reach that stop only when the value is too
    deep. The parsed value holds no integer orjson cannot write (it read those as floats),
    so the depth is the only reason it can fail."""
    budget = _WALK_BUDGET
    stack: list[tuple[list[Any] | dict[str, Any], int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return True
        children = node.values() if isinstance(node, dict) else node
        budget -= len(children)
        if budget < 0:
            return _too_deep_for_writer(value, max_depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, list | dict))
    return False


def _too_deep_for_writer(value: list[Any] | dict[str, Any], max_depth: int) -> bool:
    probe: Any = value
    for _ in range(_WRITER_DEPTH - max_depth):
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


async def dumps_cooperatively(value: Any) -> bytes:
    """``dumps``, letting the event loop run other work while long strings (a tool result of
    many megabytes) are written a piece at a time."""
    steps = longstrings.write(value)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            written: bytes | None = done.value
            break
        await asyncio.sleep(0)
    return dumps(value) if written is None else written
