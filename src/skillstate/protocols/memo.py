"""Decoding a session's history once: the message items of its previous request, and what they
decoded to.

An agent re-sends its whole history on every request, so nearly every message of a request
was decoded already, for the request before it. ``ItemMemo`` keeps, for one session, each
message item of the previous request (the parsed JSON value) with the canonical ``Message``
it became; an adapter decoding the next request asks it for each item by position, and an item
equal to the one at that position last time is answered with the same ``Message`` object,
without decoding it again. Equal is Python's ``==`` on parsed JSON, which compares in C and
costs a fraction of a millisecond for megabytes of history. It is looser than the bytes: it
holds ``1``, ``1.0`` and ``true`` at the same place for equal, and objects whose keys come in
another order; the reused message then keeps the spelling and key order of the earlier
request, a difference no client makes when it re-sends its own history. Everything downstream
can then tell a message it saw before by identity.

A session may carry more than one conversation (a host's side requests and subagents share
its session id): the memo keeps the latest few (``THREADS``), told apart by their first item,
so a title request does not make the main loop's next request decode afresh.

The canonical model is treated as immutable after decoding (nothing in the gateway changes a
request's messages in place; lanes build new lists), which is what makes sharing the objects
between requests safe.

A memo is kept only when the whole request decoded (``finish``): a body refused half-way
leaves the previous items in place (``abort`` drops what it had read). ``SessionMemos`` bounds
them: the sessions whose kept bodies add up to ``max_bytes`` at most, the least recently used
dropped first, and none for a body under ``min_bytes`` (a short history decodes fast; its memo
would only cost memory, about three times the body's bytes).
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

THREADS = 3
"""Conversations one session's memo keeps, the most recently decoded first."""


@dataclass(slots=True)
class _Thread:
    raw: list[Any] = field(default_factory=list)
    decoded: list[Any] = field(default_factory=list)
    size: int = 0
    starts: list[int] = field(default_factory=list)
    """For items decoded in groups (``groups``): the item each decoded message begins at."""


class ItemMemo:
    """One session's previous message items and their decoded messages (see the module)."""

    __slots__ = ("_next", "_old", "_threads", "fresh", "reused")

    def __init__(self) -> None:
        self._threads: list[_Thread] = []
        self._old = _Thread()
        self._next = _Thread()
        self.reused = 0
        """Items answered from an earlier request in the last decode."""
        self.fresh = 0
        """Items decoded in the last decode."""

    @property
    def held_bytes(self) -> int:
        """The bodies of the conversations kept, in bytes."""
        return sum(thread.size for thread in self._threads)

    def start(self) -> None:
        self._old, self._next = _Thread(), _Thread()
        self.reused = self.fresh = 0

    def item(self, index: int, raw: Any, decode: Callable[[Any, str], T], path: str) -> T:
        """Item ``index`` of the messages (``raw``), decoded by ``decode(raw, path[index])``
        unless it equals the earlier request's item there; the first item chooses which
        earlier request of the session that is."""
        if index == 0:
            self._old = next((t for t in self._threads if t.raw and t.raw[0] == raw), _Thread())
        old = self._old
        if index < len(old.raw) and old.raw[index] == raw:
            found: T = old.decoded[index]
            self.reused += 1
        else:
            found = decode(raw, f"{path}[{index}]")
            self.fresh += 1
        self._next.raw.append(raw)
        self._next.decoded.append(found)
        return found

    def items(self, raw: list[Any], decode: Callable[[Any, str], T], path: str) -> list[T]:
        """All of ``raw`` as ``item`` would give them one by one. The common case, a history
        that only grew, is told by one comparison of the earlier items with the start of
        ``raw`` (in C), and only the new ones are decoded."""
        if not raw:
            return []
        first = self.item(0, raw[0], decode, path)
        old = self._old
        known = len(old.raw)
        if known > 1 and len(raw) >= known and raw[1:known] == old.raw[1:known]:
            self._next.raw.extend(raw[1:known])
            self._next.decoded.extend(old.decoded[1:known])
            self.reused += known - 1
            return [first, *old.decoded[1:known], *self._rest(raw, known, decode, path)]
        return [first, *self._rest(raw, 1, decode, path)]

    def groups(
        self, raw: list[Any], decode_from: Callable[[int], tuple[list[T], list[int]]]
    ) -> list[T]:
        """Items that decode in groups (a wire whose one message is a run of items): the
        earlier request's messages that begin before its first item ``raw`` does not repeat
        but the last of them (a run may go on), then ``decode_from(start)``: the messages
        of ``raw[start:]`` and the item each begins at. Restarting where a message began
        decodes as a whole pass does, the items before it being the same."""
        if not raw:
            return []
        old = next((t for t in self._threads if t.raw and t.raw[0] == raw[0]), _Thread())
        same = _repeated(old.raw, raw)
        keep = max(0, bisect.bisect_left(old.starts, same) - 1)
        start = old.starts[keep] if keep else 0
        added, starts = decode_from(start)
        if added and _same_run(old, keep, same, starts, len(raw)):
            added[0] = old.decoded[keep]  # the run did not go on: the very message again
            self.reused += 1
            self.fresh -= 1
        messages = [*old.decoded[:keep], *added]
        self._next = _Thread(list(raw), messages, starts=[*old.starts[:keep], *starts])
        self.reused += keep
        self.fresh += len(added)
        return messages

    def _rest(
        self, raw: list[Any], start: int, decode: Callable[[Any, str], T], path: str
    ) -> list[T]:
        return [self.item(i, raw[i], decode, path) for i in range(start, len(raw))]

    def finish(self, size: int, keep: bool = True) -> None:
        """The request (a body of ``size`` bytes) decoded whole: its items are the ones a
        later request of its conversation is read by (unless ``keep`` is false)."""
        done, self._next, old = self._next, _Thread(), self._old
        self._old = _Thread()
        if not keep:
            return
        done.size = size
        self._threads = [done, *(t for t in self._threads if t is not old)][:THREADS]

    def abort(self) -> None:
        """The request was refused half-way: what it had read is dropped."""
        self._old, self._next = _Thread(), _Thread()


def _same_run(old: _Thread, keep: int, same: int, starts: list[int], items: int) -> bool:
    """Whether the first message decoded again (the earlier request's message ``keep``, the
    last to begin before item ``same``) spans the same items as it did, all of them repeated:
    a run that did not go on decodes to an equal message."""
    if keep >= len(old.decoded) or not starts or starts[0] != old.starts[keep]:
        return False
    old_end = old.starts[keep + 1] if keep + 1 < len(old.starts) else len(old.raw)
    new_end = starts[1] if len(starts) > 1 else items
    return old_end == new_end <= same


def _repeated(old: list[Any], new: list[Any]) -> int:
    """How many leading items of ``new`` equal ``old``'s (all of them in one comparison in C
    when the history only grew)."""
    if len(new) >= len(old) and new[: len(old)] == old:
        return len(old)
    pairs = enumerate(zip(old, new, strict=False))
    return next((i for i, (a, b) in pairs if a != b), min(len(old), len(new)))


def decode_items(
    items: list[Any], path: str, decode: Callable[[Any, str], T], memo: ItemMemo | None
) -> list[T]:
    """``items`` decoded one by one, through ``memo`` when there is one."""
    if memo is None:
        return [decode(item, f"{path}[{i}]") for i, item in enumerate(items)]
    return memo.items(items, decode, path)


class SessionMemos:
    """An ``ItemMemo`` per session, the most recently used kept while their bodies add up to
    ``max_bytes`` (a body's length stands for what its memo holds); the session decoded last
    is always kept, alone if its body is over the bound."""

    def __init__(self, max_bytes: int = 8 * 1024 * 1024, min_bytes: int = 128 * 1024) -> None:
        self.max_bytes = max_bytes
        self.min_bytes = min_bytes
        self._memos: OrderedDict[str, ItemMemo] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._memos)

    @property
    def held_bytes(self) -> int:
        return self._bytes

    def get(self, session: str) -> ItemMemo:
        found = self._memos.get(session)
        if found is None:
            return ItemMemo()
        self._memos.move_to_end(session)
        return found

    def finish(self, session: str, memo: ItemMemo, size: int) -> None:
        """``memo`` decoded a whole body of ``size`` bytes: kept if that body is worth it."""
        worth = size >= self.min_bytes
        before = memo.held_bytes if self._memos.get(session) is memo else 0
        memo.finish(size, keep=worth)
        if not memo.held_bytes:
            return
        self._memos[session] = memo
        self._memos.move_to_end(session)
        self._bytes += memo.held_bytes - before
        while self._bytes > self.max_bytes and len(self._memos) > 1:
            _, dropped = self._memos.popitem(last=False)
            self._bytes -= dropped.held_bytes
