"""The circuit of each upstream shared by every gateway on one Redis (the ``redis`` setting),
or by the processes of one machine through their SQLite file (``--workers`` without Redis,
``storage.sqlite_coordination``):
the outcomes all of them counted are judged together, and a circuit one of them opens is open
in all of them until the same moment.

Off the request path: every ``SYNC_S`` seconds, one pipeline per upstream adds what this
process counted since the last time to the window's current bucket in Redis
(``skillstate:circuit:<upstream>:<bucket>``, a hash of calls, failed calls, tries and failed
tries, buckets of ``window_s / BUCKETS`` seconds on the wall clock, expiring after two
windows), reads the window's buckets back and gives the circuit what the others counted
(``Circuit.observe``: the sum less this process's own share). A circuit that opened here sets
``skillstate:circuit:<upstream>:open`` for ``open_s`` and empties the window; a process that
finds that key opens its own circuit until it expires. Trials (half-open) stay each process's.

A request never waits on Redis. One that cannot be reached leaves each circuit judging its own
outcomes alone, said once in the log, until Redis answers again.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from skillstate.support.periodic import Periodic
from skillstate.upstream.circuit import BUCKETS, NONE, Circuit, CircuitPolicy, Counts

log = logging.getLogger("skillstate.upstream")

KEY_PREFIX = "skillstate:circuit:"
SYNC_S = 1.0
"""How often each process tells and reads the shared window."""
_FIELDS = ("c", "f", "t", "ft")


class Window(Protocol):
    """Where the gateways' counts meet (Redis, or the SQLite file of one machine's processes)."""

    async def exchange(
        self, name: str, buckets: range, add: Counts | None, policy: CircuitPolicy
    ) -> tuple[list[Counts], float | None]:
        """Add ``add`` to the newest of ``buckets`` of upstream ``name`` (None: this process
        opened its circuit: mark it open for ``open_s`` and empty the window); the counts of
        ``buckets`` in order, and for how many more seconds a gateway's opening holds (None:
        none does)."""
        ...


class RedisWindow:
    """The window in Redis: a hash a bucket, ``...:open`` with a time to live."""

    def __init__(self, redis: Any) -> None:
        self._redis = redis

    async def exchange(
        self, name: str, buckets: range, add: Counts | None, policy: CircuitPolicy
    ) -> tuple[list[Counts], float | None]:
        keys = [f"{KEY_PREFIX}{name}:{index}" for index in buckets]
        opened_key = f"{KEY_PREFIX}{name}:open"
        pipe = self._redis.pipeline(transaction=False)
        if add is None:
            pipe.set(opened_key, "1", px=max(1, int(policy.open_s * 1000)))
            pipe.delete(*keys)  # the window starts afresh, in every gateway
        elif any(add):
            for field, count in zip(_FIELDS, add, strict=True):
                pipe.hincrby(keys[-1], field, count)
            pipe.pexpire(keys[-1], int(policy.window_s * 2000))
        for key in keys:
            pipe.hmget(key, *_FIELDS)
        pipe.pttl(opened_key)
        replies = await pipe.execute()
        counts = [_counts([int(v or 0) for v in values]) for values in replies[-len(keys) - 1 : -1]]
        ttl = int(replies[-1])
        return counts, ttl / 1000 if ttl > 0 else None


class CircuitSync:
    """Keeps ``circuits`` (this process's, by upstream, as they are made) in step with those
    of the other gateways on ``window``."""

    def __init__(
        self,
        window: Window,
        circuits: Mapping[str, Circuit],
        policy: CircuitPolicy,
        *,
        every: float = SYNC_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._window = window
        self._circuits = circuits
        self._policy = policy
        self._every = every
        self._clock = clock
        self._mine: dict[str, dict[int, list[int]]] = {}
        """Per upstream, per bucket of the window: what this process added to it."""
        self._pending: dict[str, list[int]] = {}
        """Per upstream: counted here, not yet added to the window (a sync that failed)."""
        self._down = False
        self._syncing = Periodic(every, self.sync)

    def start(self) -> None:
        self._syncing.start()

    async def close(self) -> None:
        await self._syncing.close()

    async def sync(self) -> None:
        """One round: every circuit told and updated; the window failing is logged once."""
        try:
            for name, circuit in list(self._circuits.items()):
                await self._sync(name, circuit)
        except Exception as error:
            for circuit in self._circuits.values():
                circuit.observe(NONE)  # stale counts would judge for gateways not heard
            if not self._down:
                log.warning(
                    "the circuits' shared window cannot be read (%s): each process judges its"
                    " own outcomes until it answers",
                    error,
                )
                self._down = True
            return
        if self._down:
            log.info("the circuits' shared window is read again")
            self._down = False

    async def _sync(self, name: str, circuit: Circuit) -> None:
        now = math.floor(self._clock() * BUCKETS / self._policy.window_s)
        buckets = range(now - BUCKETS + 1, now + 1)
        pending = self._pending.setdefault(name, [0, 0, 0, 0])
        for at, count in enumerate(circuit.unsent()):
            pending[at] += count
        opened = circuit.opened_unsent
        add = None if opened else _counts(pending)
        counts, open_for = await self._window.exchange(name, buckets, add, self._policy)
        mine = self._mine.setdefault(name, {})
        if opened:
            circuit.opened_unsent = False
            mine.clear()
        else:
            kept = mine.setdefault(now, [0, 0, 0, 0])
            for at in range(4):
                kept[at] += pending[at]
        self._pending[name] = [0, 0, 0, 0]
        for index in [index for index in mine if index < buckets.start]:
            del mine[index]
        others = [0, 0, 0, 0]
        for index, values in zip(buckets, counts, strict=True):
            own = mine.get(index, (0, 0, 0, 0))
            for at, value in enumerate(values):
                others[at] += max(0, value - own[at])
        was_open = circuit.retry_in() > 0
        circuit.observe(_counts(others), open_for)
        if not was_open and circuit.retry_in() > 0:
            mine.clear()  # opened by another gateway, which emptied the window


def _counts(values: list[int]) -> Counts:
    return values[0], values[1], values[2], values[3]
