"""Reading a body that re-sends the one before it: only its new bytes are parsed.

An agent's request carries its whole history, and the next request carries the same bytes
again with a turn appended (and, from a client that moves its cache breakpoint, the last
message or two re-sent with a marker changed). Parsing all of it costs more per request the
longer the session runs. ``Chart`` keeps, for one body, where its history array opens and
where each of its items ends, with the parsed items and the keys before the array; a new body
whose bytes start with the chart's bytes up to the end of item ``k`` is read as those ``k``
items, unparsed, followed by what a parse of the rest gives.

Exactness. JSON's grammar is context-free: the bytes up to the end of item ``k`` leave a
parser in one state (inside the array, after a value, at a known depth), so the rest parses
in the new body exactly as it parses behind a prefix that leaves the same state, and a
wrapper does: ``[0`` before the rest of the array (then ``]``), ``{`` before the keys after
it. The depth limit is applied with the levels the wrapper does not stand for. What can go
wrong in the rest (a syntax error, a nesting too deep, an integer orjson cannot keep) makes
``extend`` give up, and the body is read whole, for the reader's own verdict; a key after the
array repeating it or one before it (the later value would win) gives up too.

Finding where items end without a parser. Strings are matched whole by a regular expression
(their escapes included), so the brackets, braces and commas left are the document's
structure; counting the brackets gives the depth, and a comma or the closing bracket at the
array's own depth ends an item. Charting a body costs a pass over all of it, about four times
a parse; extending one costs a pass over what is new. Both are done in steps.
"""

from __future__ import annotations

import itertools
import re
from collections import OrderedDict
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from skillstate.support import jsonio

_TOKENS = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[\[\]{},]', re.DOTALL)
"""A string literal, or one structural byte; what lies between them is numbers, literals
(``true``), colons and white space."""

_SPACE = b" \t\r\n"
_TOKENS_PER_STEP = 4096
_AT_ONCE = 64 * 1024
"""A body shorter than this is parsed without a step: well under a millisecond."""

Steps = Generator[None, None, Any]


@dataclass(frozen=True, slots=True)
class Chart:
    """One body, and what is known of its history array (the value of ``key``, at the top)."""

    raw: bytes
    key: str
    before: dict[str, Any]
    """The keys before the array, parsed (the array's key among them, at its place)."""
    ends: list[int]
    """Per item, the offset just past it: the comma after it, or the array's ``]``."""
    items: list[Any]
    """The items, parsed."""

    def __post_init__(self) -> None:
        assert len(self.ends) == len(self.items)


def chart(raw: bytes, value: Any, key: str) -> Generator[None, None, Chart | None]:
    """``raw``'s chart, given its parsed ``value``; None where ``key`` is not a top-level
    array, or not spelled plainly."""
    items = value.get(key) if isinstance(value, dict) else None
    if not isinstance(items, list):
        return None
    opened = yield from _opening(raw, b'"' + key.encode() + b'"')
    if opened is None:
        return None
    commas, close = yield from _separators(raw, opened + 1)
    if close < 0:
        return None
    ends = [*commas, close] if commas or raw[opened + 1 : close].strip(_SPACE) else []
    try:
        before = jsonio.loads(raw[:opened] + b"[]}")
        after = yield from _after(raw, close)
    except ValueError:
        return None
    if after is None or key in after or len(ends) != len(items):
        return None  # a repeated key: the parse kept another array than the one found
    return Chart(raw, key, before, ends, items)


def extend(
    old: Chart, raw: bytes, kept: int | None = None
) -> Generator[None, None, tuple[Any, Chart] | None]:
    """``raw`` parsed, and its chart, where it repeats ``old`` to the end of an item at
    least; None where it does not, or where the rest cannot be read on its own (read ``raw``
    whole: that is the verdict on it). ``kept``: ``shared_items(old, raw)``, when known."""
    kept = shared_items(old, raw) if kept is None else kept
    if kept == 0:
        return None
    at = old.ends[kept - 1]
    commas, close = yield from _separators(raw, at)
    if close < 0:
        return None
    try:
        added = yield from jsonio.reading(b"[0" + raw[at:close] + b"]", jsonio.MAX_DEPTH - 1)
        after = yield from _after(raw, close)
    except ValueError:
        return None
    added = added[1:]
    if after is None or old.key in after or len(added) != len(commas):
        return None
    items = [*old.items[:kept], *added]
    value = dict(old.before)
    value[old.key] = items
    value.update(after)
    return value, Chart(raw, old.key, old.before, [*old.ends[: kept - 1], *commas, close], items)


def shared_items(old: Chart, raw: bytes) -> int:
    """How many of ``old``'s items ``raw`` repeats byte for byte, with everything before
    them. The last ones are tried first (a history that grew), then a bisection."""
    view = memoryview(old.raw)
    ends = old.ends

    def repeats(k: int) -> bool:
        return k == 0 or raw.startswith(view[: ends[k - 1]])

    for k in range(len(ends), max(0, len(ends) - 3), -1):
        if repeats(k):
            return k
    low, high = 0, max(0, len(ends) - 3)  # repeats(low) holds; the answer is below high+1
    while low < high:
        middle = (low + high + 1) // 2
        if repeats(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _after(raw: bytes, close: int) -> Steps:
    """The keys after the array closing at ``close``, parsed; None if what follows it is not
    the rest of an object (a key or the object's end)."""
    rest = raw[close + 1 :].lstrip(_SPACE)
    if rest[:1] == b"}":
        return (yield from jsonio.reading(b"{" + rest))
    if rest[:1] != b"," or rest[1:].lstrip(_SPACE)[:1] != b'"':
        return None
    return (yield from jsonio.reading(b"{" + rest[1:]))


def _opening(raw: bytes, key: bytes) -> Generator[None, None, int | None]:
    """The offset of the ``[`` opening the top-level array of ``key`` (a quoted name)."""
    depth, expect_key, current = 0, False, b""
    for n, token in enumerate(_TOKENS.finditer(raw)):
        if n % _TOKENS_PER_STEP == _TOKENS_PER_STEP - 1:
            yield
        text = token[0]
        if text in (b"{", b"["):
            depth += 1
            if depth == 2 and current == key:
                return token.start() if text == b"[" else None
            expect_key, current = depth == 1 and text == b"{", b""
        elif text in (b"}", b"]"):
            depth -= 1
        elif text == b",":
            expect_key = depth == 1
        elif depth == 1:
            current, expect_key = (text if expect_key else b""), False
    return None


def _separators(raw: bytes, start: int) -> Generator[None, None, tuple[list[int], int]]:
    """From ``start``, inside an array and outside any string: the offsets of the commas at
    the array's own depth, and of its closing ``]`` (-1 if it does not close)."""
    depth = 0
    commas: list[int] = []
    for n, token in enumerate(_TOKENS.finditer(raw, start)):
        if n % _TOKENS_PER_STEP == _TOKENS_PER_STEP - 1:
            yield
        text = token[0]
        if text in (b"[", b"{"):
            depth += 1
        elif text in (b"]", b"}"):
            if depth == 0:
                return commas, (token.start() if text == b"]" else -1)
            depth -= 1
        elif text == b"," and depth == 0:
            commas.append(token.start())
    return commas, -1


class Bodies:
    """The charts of recent bodies worth one (``min_bytes`` and more), the most recently read
    first, while their bytes add up to ``max_bytes`` (the last one read always kept)."""

    def __init__(self, max_bytes: int = 16 * 1024 * 1024, min_bytes: int = 128 * 1024) -> None:
        self.max_bytes = max_bytes
        self.min_bytes = min_bytes
        self._charts: OrderedDict[int, Chart] = OrderedDict()
        self._handles = itertools.count()
        self._bytes = 0
        self.spliced = 0
        """Bodies read as a kept chart's items and a parse of the rest."""

    def __len__(self) -> int:
        return len(self._charts)

    @property
    def held_bytes(self) -> int:
        return self._bytes

    async def read(self, raw: bytes, key: str) -> Any:
        """``raw`` parsed, as ``jsonio.loads_cooperatively`` would (a body too short to hold
        the event loop is read in one go: each step costs a turn of the loop)."""
        if len(raw) < min(self.min_bytes, _AT_ONCE):
            return jsonio.loads(raw)
        return await jsonio.run_cooperatively(self._reading(raw, key))

    def _reading(self, raw: bytes, key: str) -> Steps:
        found, shared = self._best(raw, key) if len(raw) >= self.min_bytes else (None, 0)
        if found is not None:
            spliced = yield from extend(self._charts[found], raw, shared)
            if spliced is not None:
                value, grown = spliced
                self._keep(grown, replacing=found)
                self.spliced += 1
                return value
        value = yield from jsonio.reading(raw)
        if len(raw) >= self.min_bytes:
            charted = yield from chart(raw, value, key)
            if charted is not None:
                self._keep(charted, replacing=found)
        return value

    def _best(self, raw: bytes, key: str) -> tuple[int | None, int]:
        """The kept chart whose first item ``raw`` repeats, and the most items of; and how
        many. The most recently read are tried first, and one ``raw`` repeats whole ends the
        search (many sessions sending one history would otherwise each compare it with every
        kept chart)."""
        best, most = None, 0
        for handle, kept in reversed(self._charts.items()):
            if kept.key != key or not kept.ends:
                continue
            if not raw.startswith(memoryview(kept.raw)[: kept.ends[0]]):
                continue
            shared = shared_items(kept, raw)
            if shared > most:
                best, most = handle, shared
            if shared == len(kept.ends):
                break
        return best, most

    def _keep(self, kept: Chart, replacing: int | None) -> None:
        """``kept`` in, the chart it grew from out, unless a read that finished in between
        (reads take turns with the event loop) replaced or dropped that one already."""
        replaced = self._charts.pop(replacing, None) if replacing is not None else None
        if replaced is not None:
            self._bytes -= len(replaced.raw)
        self._charts[next(self._handles)] = kept
        self._bytes += len(kept.raw)
        while self._bytes > self.max_bytes and len(self._charts) > 1:
            _, dropped = self._charts.popitem(last=False)
            self._bytes -= len(dropped.raw)
