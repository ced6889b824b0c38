"""What was computed over a conversation, remembered for the next request that extends it.

An agent re-sends its whole history on every request, and a session's re-sent messages are the
very same ``Message`` objects from one request to the next (``protocols.memo``). A
``PrefixMemo`` keeps, per conversation, a value computed over its messages with weak
references to those messages; the next request whose messages start with the same objects
(checked by identity, a pointer comparison per message) gets the value back with the length of
the prefix it covers, and computes only what comes after. Nothing is kept alive by the memo,
and equal but different objects never match (they may differ where equality does not look).

A conversation whose first message is gone is dropped at the next ``keep``: it can never be
found again, and its value would only hold memory until pushed out (a request decoded afresh,
under ``protocols.memo``'s bound, leaves one behind each time). So the memo holds about the
conversations still alive, a few at a time, and the sweep is short. Bounded besides by the
number of messages remembered in all, the least recently used conversation dropped first; a
conversation shorter than ``min_messages`` is not remembered at all. Safe to use from several
threads.
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Generic, TypeVar

from skillstate.conversation.model import Message

T = TypeVar("T")


class PrefixMemo(Generic[T]):
    """Per conversation (told by its first message object), a value over its messages."""

    def __init__(self, max_messages: int = 20_000, min_messages: int = 64) -> None:
        self.max_messages = max_messages
        self.min_messages = min_messages
        """A shorter conversation is computed whole: cheap, and nothing to keep."""
        self._kept: OrderedDict[int, tuple[tuple[weakref.ref[Message], ...], T]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def find(self, messages: Sequence[Message]) -> tuple[int, T] | None:
        """The value kept for a conversation ``messages`` starts with, and how many of
        ``messages`` it covers; None when there is none."""
        if not messages:
            return None
        with self._lock:
            found = self._kept.get(id(messages[0]))
            if found is None:
                return None
            refs, value = found
            if len(refs) > len(messages):
                return None
            if not all(map(operator.is_, map(operator.call, refs), messages)):  # in C
                return None
            self._kept.move_to_end(id(messages[0]))
            return len(refs), value

    def keep(self, messages: Sequence[Message], value: T) -> None:
        """``value`` is what was computed over ``messages``."""
        if not self.min_messages <= len(messages) <= self.max_messages:
            return
        refs = tuple(map(weakref.ref, messages))
        key = id(messages[0])
        with self._lock:
            old = self._kept.pop(key, None)
            self._held -= len(old[0]) if old is not None else 0
            self._kept[key] = (refs, value)
            self._held += len(refs)
            for gone in [k for k, (refs, _) in self._kept.items() if refs[0]() is None]:
                self._held -= len(self._kept.pop(gone)[0])
            while self._held > self.max_messages:
                _, (dropped, _) = self._kept.popitem(last=False)
                self._held -= len(dropped)

    def __len__(self) -> int:
        return len(self._kept)
