"""``update``: read, compute, commit, and again on a conflict, for any store.

Within one process the updates of a session take turns behind a lock, so they never conflict
and never spin; the retry loop is for another process sharing the same database.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from skillstate.storage.protocols import Change, StateRecord, Updater, VersionConflict

#: Conflicts tolerated from other processes before ``update`` gives up and re-raises.
UPDATE_ATTEMPTS = 20

Load = Callable[[str], Awaitable[StateRecord]]
Commit = Callable[[str, Change, int], Awaitable[StateRecord]]


class SessionLocks:
    """One asyncio lock per session, dropped when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, session: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(session, (asyncio.Lock(), 0))
        self._locks[session] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[session]
            if users == 1:
                del self._locks[session]
            else:
                self._locks[session] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


async def run_update(
    load: Load,
    commit: Commit,
    locks: SessionLocks,
    session: str,
    updater: Updater,
    attempts: int = UPDATE_ATTEMPTS,
) -> StateRecord:
    """The record ``updater`` produced from the session's latest one, committed."""
    if attempts < 1:
        raise ValueError("attempts must be positive")
    async with locks.hold(session):
        for attempt in range(attempts):
            record = await load(session)
            change = updater(record)
            if change is None:
                return record
            try:
                return await commit(session, change, record.version)
            except VersionConflict:
                if attempt == attempts - 1:
                    raise
                await asyncio.sleep(0.002 * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover
