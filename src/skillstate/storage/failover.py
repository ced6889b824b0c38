"""The switch a resilient store turns on a failure: the backing store until a call fails, then
memory, and back to the backing store once it answers again and what memory took meanwhile
has been written back to it (``storage.resilient``).

Trying again runs off the request path: a task that sleeps ``retry_every`` seconds, then runs
the wrapper's catch-up; a catch-up that fails (the store still down) is tried again after the
same pause, and one that succeeds ends with the switch back (``recovered``), which the
catch-up makes in the same step of the event loop as its last check that nothing is left to
write, so no call lands in memory after it and is forgotten."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from skillstate.support.periodic import Periodic

log = logging.getLogger("skillstate.storage")

RETRY_SECONDS = 2.0
"""How long a degraded store waits before trying its backing store again."""
UNWRITTEN_SHOWN = 100
"""How many of the keys that could not be written back are kept to report."""


class Failover:
    """Whether a store is degraded (``degraded``: why, or None), and the task that tries its
    backing store again (none where ``retry_every`` is None: nothing to go back to)."""

    def __init__(self, what: str, *, retry_every: float | None = RETRY_SECONDS) -> None:
        self.what = what
        self.degraded: str | None = None
        #: Keys (sessions, refs) whose changes in memory could not be written back, newest
        #: last, at most ``UNWRITTEN_SHOWN``; ``unwritten_count`` counts them all.
        self.unwritten: list[str] = []
        self.unwritten_count = 0
        self._retry_every = retry_every
        self._retrying: Periodic | None = None

    def fail(self, error: BaseException, catch_up: Callable[[], Awaitable[None]]) -> None:
        """Note the failure (logged once per outage) and start trying again."""
        if self.degraded is not None:
            return
        self.degraded = f"{type(error).__name__}: {error}"
        retrying = self._retry_every is not None
        log.warning(
            "the %s failed (%s); continuing in memory%s",
            self.what,
            self.degraded,
            f", trying it again every {self._retry_every:g} s"
            if retrying
            else ": what this process keeps from now on is lost when it stops",
        )
        if self._retry_every is not None:

            async def retried() -> bool:
                return await self._retried(catch_up)

            self._retrying = Periodic(self._retry_every, retried)
            self._retrying.start()

    def lost(self, key: str, why: str) -> None:
        """``key``'s changes made in memory were not written back, because ``why``."""
        log.warning("the %s: %s was not written back (%s)", self.what, key, why)
        self.unwritten_count += 1
        self.unwritten.append(key)
        del self.unwritten[:-UNWRITTEN_SHOWN]

    def recovered(self, written: int) -> None:
        """The backing store serves again; ``written``: what memory held that went to it."""
        log.warning(
            "the %s answers again (down: %s); %d written back from memory",
            self.what,
            self.degraded,
            written,
        )
        self.degraded = None

    async def close(self) -> None:
        if self._retrying is not None:
            await self._retrying.close()

    async def _retried(self, catch_up: Callable[[], Awaitable[None]]) -> bool:
        """One more try; whether the store still fails (then the next comes later)."""
        try:
            await catch_up()
        except Exception as error:
            log.debug("the %s still fails: %s: %s", self.what, type(error).__name__, error)
        return self.degraded is not None
