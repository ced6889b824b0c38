"""Long strings in JSON, read and written in steps.

A 16 MiB tool result (base64, minified code, a log) is one string literal, and orjson reads or
writes it in one call that holds the interpreter for tens of milliseconds: every other client
of the gateway waits that long. Here the long literals are found in C-speed passes over
slices of the document, cut out, and decoded (or encoded) a mebibyte at a time, with a step
between pieces; orjson reads the short rest (the skeleton) as usual.

The result is the value, or the bytes, that one orjson call gives, exactly: every piece is
read by orjson itself, and anything unexpected (a piece it refuses, a skeleton it refuses)
gives None, so the caller reads the document whole and reports orjson's own error.

Finding literals without a parser. In valid JSON every backslash sits inside a string, and a
run of backslashes starts an escape at its first one, so replacing ``\\\\`` and then ``\\"``
by two placeholder bytes (same length, left to right) leaves exactly the quotes that open or
close a string. Counting those per slice tells whether a slice starts inside a string; a
slice that does and holds no quote lies inside one long literal. A document that is not
valid JSON can fool this only into a skeleton orjson refuses.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator
from typing import Any

import orjson

LONG = 64 * 1024
"""Strings of about this length and more are read and written in pieces."""

PIECE = 1024 * 1024
"""What one step reads or writes of a long string."""

_SLICES_PER_STEP = 16
_BACKSLASH = 0x5C
_SPACE = re.compile(rb"[ \t\r\n]*")
_ESCAPE_LEN = 12
"""The longest escape (a surrogate pair, ``\\ud83d\\ude00``): a cut never falls this close
after a backslash."""

Steps = Generator[None, None, Any]


def read(
    data: bytes, *, long: int = LONG, piece: int = PIECE
) -> Generator[None, None, tuple[bytes, dict[str, str]] | None]:
    """The skeleton of ``data`` (each long literal's text replaced by a placeholder) and the
    literals by placeholder, decoded; None if ``data`` has no long literal or is not what a
    cut can read (then read it whole)."""
    spans = yield from _literals(data, long)
    if not spans:
        return None
    tag = "\x00" + os.urandom(8).hex()
    skeleton: list[bytes] = []
    table: dict[str, str] = {}
    at = 0
    for n, (start, end) in enumerate(spans):
        text = yield from _decode(data, start, end, piece)
        if text is None:
            return None
        key = f"{tag}:{n}"
        table[key] = text
        skeleton += (data[at:start], orjson.dumps(key)[1:-1])
        at = end
    skeleton.append(data[at:])
    return b"".join(skeleton), table


def put_back(value: Any, table: dict[str, str]) -> Steps:
    """``value`` with each placeholder string replaced by its literal, in place; stops when
    every one is found. Placeholders are never keys (a long key is left in the skeleton)."""
    if type(value) is str:  # the document is one long string
        return table.get(value, value)
    left = len(table)
    stack = [value] if isinstance(value, dict | list) else []
    seen = 0
    while stack and left:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            if type(child) is str:
                text = table.get(child)
                if text is not None:
                    node[key] = text
                    left -= 1
            elif isinstance(child, dict | list):
                stack.append(child)
        seen += len(node)
        if seen > 2_000:
            seen = 0
            yield
    return value


def write(
    value: Any, *, long: int = LONG, piece: int = PIECE
) -> Generator[None, None, bytes | None]:
    """``orjson.dumps(value)``'s bytes, long strings encoded a piece at a time; None if
    ``value`` holds no long string, has too many values to look through cheaply, or orjson
    cannot write it (then write it whole)."""
    tag = "\x00" + os.urandom(8).hex()
    longs: list[str] = []
    try:
        skeleton = _without_longs(value, longs, tag, long, [_WALK_LIMIT])
    except (_TooMany, RecursionError):
        return None
    if not longs:
        return None
    yield
    try:
        frame = orjson.dumps(skeleton)
    except TypeError:
        return None
    out: list[bytes] = []
    at = 0
    for n, text in enumerate(longs):
        marker = orjson.dumps(f"{tag}:{n}")
        found = frame.find(marker, at)
        if found < 0:
            return None
        out.append(frame[at : found + 1])
        for start in range(0, len(text), piece):
            yield
            try:
                out.append(orjson.dumps(text[start : start + piece])[1:-1])
            except TypeError:  # a lone surrogate: the caller's writer handles it
                return None
        at = found + len(marker) - 1
    out.append(frame[at:])
    return b"".join(out)


# --- reading ------------------------------------------------------------------------------


def _literals(data: bytes, long: int) -> Generator[None, None, list[tuple[int, int]]]:
    """(start, end) of the text of each long string literal that is not a key."""
    spans: list[tuple[int, int]] = []
    inside = False  # whether the slice being looked at starts inside a string
    last_quote = -1  # the last quote before it
    open_at = -1  # where the literal being crossed opened, if a whole slice lies in it
    for n, (start, end) in enumerate(_slices(data, long)):
        if n % _SLICES_PER_STEP == 0:
            yield
        if data.find(b"\\", start, end) < 0:  # no escape: the quotes are all real
            view, at = data, start
        else:
            view, at = data[start:end].replace(b"\\\\", b"__").replace(b'\\"', b"__"), 0
        quotes = view.count(b'"', at, at + end - start)
        if quotes == 0:
            if inside and open_at < 0:
                open_at = last_quote
            continue
        if open_at >= 0:
            close = start + view.find(b'"', at) - at
            if not _is_key(data, close):
                spans.append((open_at + 1, close))
            open_at = -1
        last_quote = start + view.rfind(b'"', at, at + end - start) - at
        inside ^= quotes % 2 == 1
    return spans


def _slices(data: bytes, long: int) -> Generator[tuple[int, int], None, None]:
    """Slices of about ``long`` bytes that never cut a run of backslashes."""
    start, size = 0, len(data)
    while start < size:
        end = min(size, start + long)
        while end < size and data[end - 1] == _BACKSLASH:
            end += 1
        yield start, end
        start = end


def _is_key(data: bytes, close: int) -> bool:
    after = _SPACE.match(data, close + 1)
    at = after.end() if after else close + 1
    return data[at : at + 1] == b":"


def _decode(data: bytes, start: int, end: int, piece: int) -> Generator[None, None, str | None]:
    """The literal text ``data[start:end]`` as a string, read a piece at a time; None if a
    piece cannot be cut safely or orjson refuses one."""
    pieces: list[str] = []
    at = start
    while at < end:
        yield
        cut = end if end - at <= piece else _safe_cut(data, at + piece, end)
        if cut is None:
            return None
        try:
            pieces.append(orjson.loads(b'"' + data[at:cut] + b'"'))
        except orjson.JSONDecodeError:
            return None
        at = cut
    return "".join(pieces)


def _safe_cut(data: bytes, near: int, end: int) -> int | None:
    """A place at or after ``near`` that starts a character and lies in no escape."""
    for at in range(near, min(end, near + 4096)):
        if data[at] & 0xC0 != 0x80 and data.rfind(b"\\", at - _ESCAPE_LEN, at) < 0:
            return at
    return None


# --- writing ------------------------------------------------------------------------------

_WALK_LIMIT = 20_000
"""The most values ``write`` looks through for long strings before it gives up."""


class _TooMany(Exception):
    pass


def _without_longs(node: Any, longs: list[str], tag: str, long: int, budget: list[int]) -> Any:
    """``node`` with each long string replaced by its marker (collected into ``longs`` in
    document order); only the containers on the way to one are copied, the rest shared."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooMany
    if type(node) is str:
        if len(node) < long:
            return node
        longs.append(node)
        return f"{tag}:{len(longs) - 1}"
    if isinstance(node, dict):
        copied: dict[str, Any] | None = None
        for key, child in node.items():
            swapped = _without_longs(child, longs, tag, long, budget)
            if swapped is not child:
                copied = dict(node) if copied is None else copied
                copied[key] = swapped
        return node if copied is None else copied
    if isinstance(node, list):
        items: list[Any] | None = None
        for n, child in enumerate(node):
            swapped = _without_longs(child, longs, tag, long, budget)
            if swapped is not child:
                items = list(node) if items is None else items
                items[n] = swapped
        return node if items is None else items
    return node
