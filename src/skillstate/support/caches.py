"""The bounded map every per-session cache the gateway keeps in memory is made of.

Contract: a ``SessionCache`` never holds more than ``entries`` values nor more than
``max_bytes`` of them as its ``weigh`` function weighs them; the least recently used go first.
Whatever it drops must be a pure cache (found again, or recomputed, from the store or from the
next request), so a gateway's memory does not grow with the number of sessions or requests it
has served. A value that alone weighs more than ``max_bytes`` is pushed out at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

V = TypeVar("V")


def compact(raw: bytes) -> bytes:
    """``raw`` in a buffer of its own length: orjson's output keeps the 4 KiB buffer it was
    written into, so a kept small document would cost 4 KiB however short it is."""
    return memoryview(raw).tobytes()


class SessionCache(Generic[V]):
    """A least-recently-used map from session ids, bounded by count and by weight."""

    __slots__ = ("_bytes", "_entries", "_evicted", "_max_bytes", "_values", "_weigh")

    def __init__(
        self,
        *,
        entries: int,
        max_bytes: int,
        weigh: Callable[[V], int],
        evicted: Callable[[str, V], None] | None = None,
    ) -> None:
        """``evicted`` is told of each value the bounds push out (not of those ``pop``ped)."""
        self._entries = entries
        self._evicted = evicted
        self._max_bytes = max_bytes
        self._weigh = weigh
        self._values: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, session: object) -> bool:
        return session in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._values))

    @property
    def bytes(self) -> int:
        """What the kept values weigh together."""
        return self._bytes

    def get(self, session: str) -> V | None:
        """The value kept for ``session`` (now the most recently used), or None."""
        kept = self._values.get(session)
        if kept is None:
            return None
        self._values.move_to_end(session)
        return kept[0]

    def put(self, session: str, value: V) -> None:
        """Keep ``value`` for ``session``, then drop the least recently used over the bounds."""
        self.pop(session)
        weight = self._weigh(value)
        self._values[session] = (value, weight)
        self._bytes += weight
        while len(self._values) > self._entries or self._bytes > self._max_bytes:
            dropped, (old, old_weight) = self._values.popitem(last=False)
            self._bytes -= old_weight
            if self._evicted is not None:
                self._evicted(dropped, old)

    def pop(self, session: str) -> V | None:
        """Forget ``session``; what was kept for it, if anything."""
        kept = self._values.pop(session, None)
        if kept is None:
            return None
        self._bytes -= kept[1]
        return kept[0]

    def items(self) -> list[tuple[str, V]]:
        """The kept values, least recently used first."""
        return [(session, value) for session, (value, _) in self._values.items()]

    def clear(self) -> None:
        self._values.clear()
        self._bytes = 0
