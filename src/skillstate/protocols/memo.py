"""Decoding a session's history once: the message items of its previous request, and what they
decoded to.

An agent re-sends its whole history on every request, so nearly every message of a request
was decoded already, for the request before it. ``ItemMemo`` keeps, for one session, each
message item of the previous request (the parsed JSON value) with the canonical ``Message``
it became; an adapter decoding the next request asks it for each item by position, and an item
equal to the one at that position last time is answered with the same ``Message`` object,
without decoding it again. Equal is Python's ``==`` on parsed JSON, which compares in C and
costs a fraction of a millisecond for megabytes of history; it holds ``1``, ``1.0`` and
``true`` at the same place for equal, a difference no client makes when it re-sends its own
history. Everything downstream can then tell a message it saw before by identity.

The canonical model is treated as immutable after decoding (nothing in the gateway changes a
request's messages in place; lanes build new lists), which is what makes sharing the objects
between requests safe.

A memo is swapped only when the whole request decoded (``finish``): a body refused half-way
leaves the previous request's items in place. ``SessionMemos`` bounds them: the sessions whose
bodies add up to ``max_bytes`` at most, the least recently used dropped first, and none for a
body under ``min_bytes`` (a short history decodes fast; its memo would only cost memory).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class ItemMemo:
    """One session's previous message items and their decoded messages (see the module)."""

    __slots__ = ("_decoded", "_next", "_raw", "fresh", "reused")

    def __init__(self) -> None:
        self._raw: list[Any] = []
        self._decoded: list[Any] = []
        self._next: tuple[list[Any], list[Any]] = ([], [])
        self.reused = 0
        """Items answered from the previous request in the last decode."""
        self.fresh = 0
        """Items decoded in the last decode."""

    def start(self) -> None:
        self._next = ([], [])
        self.reused = self.fresh = 0

    def item(self, index: int, raw: Any, decode: Callable[[Any, str], T], path: str) -> T:
        """Item ``index`` of the messages (``raw``), decoded by ``decode(raw, path[index])``
        unless it equals the previous request's item there."""
        if index < len(self._raw) and self._raw[index] == raw:
            found: T = self._decoded[index]
            self.reused += 1
        else:
            found = decode(raw, f"{path}[{index}]")
            self.fresh += 1
        self._next[0].append(raw)
        self._next[1].append(found)
        return found

    def finish(self) -> None:
        """The request decoded whole: its items are the ones the next request is read by."""
        self._raw, self._decoded = self._next
        self._next = ([], [])


def decode_items(
    items: list[Any], path: str, decode: Callable[[Any, str], T], memo: ItemMemo | None
) -> list[T]:
    """``items`` decoded one by one, through ``memo`` when there is one."""
    if memo is None:
        return [decode(item, f"{path}[{i}]") for i, item in enumerate(items)]
    return [memo.item(i, item, decode, path) for i, item in enumerate(items)]


class SessionMemos:
    """An ``ItemMemo`` per session, the most recently used kept while their bodies add up to
    ``max_bytes`` (a body's length stands for what its memo holds)."""

    def __init__(self, max_bytes: int = 8 * 1024 * 1024, min_bytes: int = 128 * 1024) -> None:
        self.max_bytes = max_bytes
        self.min_bytes = min_bytes
        """A shorter body decodes in a few milliseconds: its memo would cost more memory (a
        few times its bytes) than it saves time, so none is kept."""
        self._memos: OrderedDict[str, tuple[ItemMemo, int]] = OrderedDict()
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
        return found[0]

    def keep(self, session: str, memo: ItemMemo, size: int) -> None:
        """``memo`` holds the items of a body of ``size`` bytes now."""
        old = self._memos.pop(session, None)
        if old is not None:
            self._bytes -= old[1]
        if size > self.max_bytes or size < self.min_bytes:
            return  # decoded whole each time rather than kept
        self._memos[session] = (memo, size)
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, (_, dropped) = self._memos.popitem(last=False)
            self._bytes -= dropped
