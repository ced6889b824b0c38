"""Stores that never fail the request (DESIGN invariant 5).

A wrapper passes every call to its backing store until one raises something other than a
caller's error (``VersionConflict``, ``StoreLimitError``). Then it logs one warning, moves to an
in-memory twin for the rest of the process, and answers the failed call from there. The state
wrapper remembers the latest record of the sessions it served recently, so those sessions
carry on from their last Σ instead of starting over; epoch documents are not carried (an epoch
is recomputed from what the client sends, at the price of one cache miss).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Self, TypeVar

from skillstate.conversation import Json
from skillstate.storage.memory import MemoryArchiveStore, MemoryStateStore
from skillstate.storage.protocols import (
    ArchiveEntry,
    ArchiveStore,
    Change,
    SessionInfo,
    StateRecord,
    StateStore,
    StoreLimitError,
    Updater,
    VersionConflict,
)
from skillstate.support import jsonio
from skillstate.support.caches import SessionCache, compact

log = logging.getLogger("skillstate.storage")
T = TypeVar("T")
#: Errors that are the caller's, raised as they are.
_CALLER_ERRORS = (VersionConflict, StoreLimitError)
#: How many sessions' latest records the state wrapper keeps for a failover.
REMEMBERED_SESSIONS = 1000
#: How many bytes of encoded records it keeps at most, all sessions together.
REMEMBERED_BYTES = 4 * 1024 * 1024
_Known = tuple[bytes, int, int, bytes]


class _Failover:
    """The switch both wrappers share: the backing store until it fails, then memory."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.degraded: str | None = None

    def fail(self, error: BaseException) -> None:
        if self.degraded is None:
            self.degraded = f"{type(error).__name__}: {error}"
            log.warning(
                "the %s failed (%s); continuing in memory: what this process keeps from now on"
                " is lost when it stops",
                self.what,
                self.degraded,
            )


class ResilientStateStore:
    """A ``StateStore`` over ``primary`` that falls back to memory instead of failing; the
    ``remembered`` most recently used sessions (at most ``remembered_bytes`` of their encoded
    records) carry over with their latest record."""

    def __init__(
        self,
        primary: StateStore,
        *,
        clock: Callable[[], float] = time.time,
        remembered: int = REMEMBERED_SESSIONS,
        remembered_bytes: int = REMEMBERED_BYTES,
    ) -> None:
        self._primary = primary
        self._clock = clock
        self._switch = _Failover("state store")
        self._fallback: MemoryStateStore | None = None
        self._known: SessionCache[_Known] = SessionCache(
            entries=remembered, max_bytes=remembered_bytes, weigh=_weight
        )

    @classmethod
    def failed(cls, error: BaseException, *, clock: Callable[[], float] = time.time) -> Self:
        """A wrapper that is in memory from the start, ``error`` being why (logged)."""
        store = cls(MemoryStateStore(clock=clock), clock=clock)
        store._degrade(error)
        return store

    @property
    def degraded(self) -> str | None:
        """Why the store is in memory, or None while the backing store serves."""
        return self._switch.degraded

    async def load(self, session: str) -> StateRecord:
        record = await self._call(lambda store: store.load(session))
        self._remember(session, record)
        return record

    async def commit(self, session: str, change: Change, *, expected_version: int) -> StateRecord:
        record = await self._call(
            lambda store: store.commit(session, change, expected_version=expected_version)
        )
        self._remember(session, record)
        return record

    async def update(self, session: str, updater: Updater) -> StateRecord:
        record = await self._call(lambda store: store.update(session, updater))
        self._remember(session, record)
        return record

    async def touch(self, session: str) -> None:
        await self._call(lambda store: store.touch(session))

    async def list_sessions(self) -> list[SessionInfo]:
        return await self._call(lambda store: store.list_sessions())

    async def reset(self, session: str) -> bool:
        self._known.pop(session)
        return await self._call(lambda store: store.reset(session))

    async def get_doc(self, session: str, name: str) -> Json | None:
        return await self._call(lambda store: store.get_doc(session, name))

    async def put_doc(self, session: str, name: str, doc: Json) -> None:
        await self._call(lambda store: store.put_doc(session, name, doc))

    async def close(self) -> None:
        if self._fallback is None:
            with contextlib.suppress(Exception):
                await self._primary.close()

    async def _call(self, op: Callable[[StateStore], Awaitable[T]]) -> T:
        if self._fallback is None:
            try:
                return await op(self._primary)
            except _CALLER_ERRORS:
                raise
            except Exception as error:
                self._degrade(error)
        assert self._fallback is not None
        return await op(self._fallback)

    def _degrade(self, error: BaseException) -> None:
        self._switch.fail(error)
        records = {
            session: StateRecord(jsonio.loads(state), version, step, jsonio.loads(meta))
            for session, (state, version, step, meta) in self._known.items()
        }
        self._fallback = MemoryStateStore(clock=self._clock, records=records)
        self._known.clear()

    def _remember(self, session: str, record: StateRecord) -> None:
        """Kept encoded (the caller may change the dicts it was given), each in a buffer of its
        own length."""
        if self._fallback is not None or record.version == 0:
            return
        state, meta = compact(jsonio.dumps(record.state)), compact(jsonio.dumps(record.meta))
        self._known.put(session, (state, record.version, record.step, meta))


def _weight(known: _Known) -> int:
    return len(known[0]) + len(known[3])


class ResilientArchiveStore:
    """An ``ArchiveStore`` over ``primary`` that falls back to memory instead of failing.

    Once degraded, new spans go to memory, while spans kept before are still read from the
    backing store where it can still read them (a full disk fails writes, not reads)."""

    def __init__(self, primary: ArchiveStore, *, max_bytes: int = 256 * 1024 * 1024) -> None:
        self._primary = primary
        self._switch = _Failover("archive store")
        self._fallback = MemoryArchiveStore(max_bytes=max_bytes)

    @classmethod
    def failed(cls, error: BaseException) -> Self:
        """A wrapper that is in memory from the start, ``error`` being why (logged)."""
        store = cls(MemoryArchiveStore())
        store._switch.fail(error)
        return store

    @property
    def degraded(self) -> str | None:
        return self._switch.degraded

    async def put(self, ref: str, data: bytes) -> None:
        if not await self._served(lambda: self._primary.put(ref, data)):
            await self._fallback.put(ref, data)

    async def get(self, ref: str) -> bytes | None:
        served = await self._served(lambda: self._primary.get(ref))
        if served:
            return served[0]
        kept = await self._fallback.get(ref)
        if kept is None:
            with contextlib.suppress(Exception):
                return await self._primary.get(ref)
        return kept

    async def add_entry(self, entry: ArchiveEntry) -> None:
        if not await self._served(lambda: self._primary.add_entry(entry)):
            await self._fallback.add_entry(entry)

    async def entries(self, session: str) -> list[ArchiveEntry]:
        served = await self._served(lambda: self._primary.entries(session))
        if served:
            return served[0]
        older: list[ArchiveEntry] = []
        with contextlib.suppress(Exception):
            older = await self._primary.entries(session)
        seen = {(e.ref, e.first_turn) for e in older}
        newer = await self._fallback.entries(session)
        merged = [*older, *(e for e in newer if (e.ref, e.first_turn) not in seen)]
        return sorted(merged, key=lambda e: (e.first_turn, e.last_turn, e.ref))

    async def forget(self, session: str) -> int:
        served = await self._served(lambda: self._primary.forget(session))
        if not served:
            with contextlib.suppress(Exception):
                served = [await self._primary.forget(session)]
        return sum(served) + await self._fallback.forget(session)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._primary.close()

    async def _served(self, op: Callable[[], Awaitable[T]]) -> list[T]:
        """``[op()]`` when the backing store did ``op``; ``[]`` once degraded, or when it just
        failed (and the wrapper is degraded from now on). Past a failure, reads still try the
        backing store, best effort, for what it held before."""
        if self.degraded is not None:
            return []
        try:
            return [await op()]
        except _CALLER_ERRORS:
            raise
        except Exception as error:
            self._switch.fail(error)
            return []
