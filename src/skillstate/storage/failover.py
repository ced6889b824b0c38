"""The switch a resilient store turns on a failure: the backing store until a call fails, then
memory, and back to the backing store once it answers again and what memory took meanwhile
has been written back to it (``storage.resilient``).

Trying again runs off the request path: a task that sleeps ``retry_every`` seconds, then runs
the wrapper's catch-up; a catch-up that fails (the store still down) is tried again after the
same pause, and one that succeeds ends with the switch back (``recovered``), which the
catch-up makes in the same step of the event loop as its last check that nothing is left to
write, so no call lands in memory after it and is forgotten."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

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
        self._task: asyncio.Task[None] | None = None

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
        if retrying:
            self._task = asyncio.get_running_loop().create_task(self._retry(catch_up))

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
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _retry(self, catch_up: Callable[[], Awaitable[None]]) -> None:
        assert self._retry_every is not None
        while self.degraded is not None:
            await asyncio.sleep(self._retry_every)
            try:
                await catch_up()
            except Exception as error:
                log.debug("the %s still fails: %s: %s", self.what, type(error).__name__, error)
