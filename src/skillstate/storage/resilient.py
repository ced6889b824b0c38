"""Stores that never fail the request (DESIGN invariant 5).

A wrapper passes every call to its backing store until one raises something other than a
caller's error (``VersionConflict``, ``StoreLimitError``). Then it logs one warning, moves to an
in-memory twin, and answers the failed call from there. The state wrapper remembers the latest
record of the sessions it served recently, so those sessions carry on from their last Σ
instead of starting over; epoch documents are not carried (an epoch is recomputed from what
the client sends, at the price of one cache miss).

While in memory, each wrapper tries its backing store again every few seconds, off the request
path (``storage.failover``). When the store answers, what memory took meanwhile is written back
and the wrapper serves from the store again: the state wrapper writes each session it changed
as memory has it now, where the store still holds the version this process last saw (a store
several gateways share may have moved on with another one: then the store's record is kept,
and the session is reported as not written back, ``unwritten``); the archive wrapper replays
its spans, index entries and forgets in the order memory took them.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Self, TypeVar

from skillstate.conversation import Json
from skillstate.storage.failover import RETRY_SECONDS, Failover
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
#: What a degraded wrapper reads to learn whether its store answers again.
PROBE = "skillstate-probe"
_Known = tuple[bytes, int, int, bytes]
Reopen = Callable[[], Awaitable[None]]
"""Makes a backing store that could not be opened ready, or raises."""


class ResilientStateStore:
    """A ``StateStore`` over ``primary`` that falls back to memory instead of failing, and
    goes back to ``primary`` once it answers (every ``retry_every`` seconds it is tried; None:
    never); the ``remembered`` most recently used sessions (at most ``remembered_bytes`` of
    their encoded records) carry over with their latest record."""

    def __init__(
        self,
        primary: StateStore,
        *,
        clock: Callable[[], float] = time.time,
        remembered: int = REMEMBERED_SESSIONS,
        remembered_bytes: int = REMEMBERED_BYTES,
        retry_every: float | None = RETRY_SECONDS,
        reopen: Reopen | None = None,
    ) -> None:
        self._primary = primary
        self._clock = clock
        self._reopen = reopen
        self.failover = Failover("state store", retry_every=retry_every)
        """Whether it is degraded, and what it could not write back (``unwritten``: the
        sessions another gateway changed meanwhile)."""
        self._fallback: MemoryStateStore | None = None
        self._known: SessionCache[_Known] = SessionCache(
            entries=remembered, max_bytes=remembered_bytes, weigh=_weight
        )
        # While in memory: the store's version of each session as this process last saw it
        # (none: it had no record), and what memory changed that is not yet written back.
        self._seen: dict[str, int] = {}
        self._pending: set[str] = set()
        self._reset: set[str] = set()
        self._docs: set[tuple[str, str]] = set()
        self._lost: set[str] = set()

    @classmethod
    def failed(cls, error: BaseException, *, clock: Callable[[], float] = time.time) -> Self:
        """A wrapper that is in memory from the start, ``error`` being why (logged)."""
        store = cls(MemoryStateStore(clock=clock), clock=clock, retry_every=None)
        store._degrade(error)
        return store

    @classmethod
    def unopened(
        cls,
        primary: StateStore,
        error: BaseException,
        reopen: Reopen,
        *,
        clock: Callable[[], float] = time.time,
        retry_every: float = RETRY_SECONDS,
    ) -> Self:
        """A wrapper in memory from the start, ``error`` being why, over a ``primary`` that
        ``reopen`` makes ready (a database that could not be reached at start): tried again
        every ``retry_every`` seconds, reopened first."""
        store = cls(primary, clock=clock, retry_every=retry_every, reopen=reopen)
        store._degrade(error)
        return store

    @property
    def degraded(self) -> str | None:
        """Why the store is in memory, or None while the backing store serves."""
        return self.failover.degraded

    async def load(self, session: str) -> StateRecord:
        record = await self._call(lambda store: store.load(session))
        self._remember(session, record)
        return record

    async def commit(self, session: str, change: Change, *, expected_version: int) -> StateRecord:
        record = await self._call(
            lambda store: store.commit(session, change, expected_version=expected_version),
            wrote=session,
        )
        self._remember(session, record)
        return record

    async def update(self, session: str, updater: Updater) -> StateRecord:
        record = await self._call(lambda store: store.update(session, updater), wrote=session)
        self._remember(session, record)
        return record

    async def touch(self, session: str) -> None:
        await self._call(lambda store: store.touch(session))

    async def list_sessions(self) -> list[SessionInfo]:
        return await self._call(lambda store: store.list_sessions())

    async def reset(self, session: str) -> bool:
        self._known.pop(session)
        reset = await self._call(lambda store: store.reset(session), wrote=session)
        if self._fallback is not None:
            self._reset.add(session)
        return reset

    async def get_doc(self, session: str, name: str) -> Json | None:
        return await self._call(lambda store: store.get_doc(session, name))

    async def put_doc(self, session: str, name: str, doc: Json) -> None:
        await self._call(lambda store: store.put_doc(session, name, doc))
        if self._fallback is not None:
            self._docs.add((session, name))

    async def close(self) -> None:
        await self.failover.close()
        with contextlib.suppress(Exception):
            await self._primary.close()

    async def _call(
        self, op: Callable[[StateStore], Awaitable[T]], *, wrote: str | None = None
    ) -> T:
        if self._fallback is None:
            try:
                return await op(self._primary)
            except _CALLER_ERRORS:
                raise
            except Exception as error:
                self._degrade(error)
        assert self._fallback is not None
        result = await op(self._fallback)
        if wrote is not None:
            self._pending.add(wrote)
        return result

    def _degrade(self, error: BaseException) -> None:
        records = {
            session: StateRecord(jsonio.loads(state), version, step, jsonio.loads(meta))
            for session, (state, version, step, meta) in self._known.items()
        }
        self._seen = {session: record.version for session, record in records.items()}
        self._fallback = MemoryStateStore(clock=self._clock, records=records)
        self._known.clear()
        self.failover.fail(error, self._catch_up)

    async def _catch_up(self) -> None:
        """Write back what memory changed, then serve from the store again; raises (and stays
        in memory) while the store still fails."""
        if self._reopen is not None:
            await self._reopen()
        await self._primary.load(PROBE)
        written = 0
        while self._pending or self._docs:
            while self._pending:
                session = self._pending.pop()
                try:
                    written += await self._write_back(session)
                except BaseException:
                    self._pending.add(session)
                    raise
            while self._docs:
                key = self._docs.pop()
                try:
                    written += await self._write_doc(*key)
                except BaseException:
                    self._docs.add(key)
                    raise
        # Nothing left to write, and no await since that was checked: switch back now.
        self._fallback = None
        self._seen, self._reset, self._lost = {}, set(), set()
        self.failover.recovered(written)

    async def _write_back(self, session: str) -> int:
        """Write ``session`` as memory has it, where the store is still at the version this
        process last saw; 1 if written."""
        assert self._fallback is not None
        if session in self._lost:
            return 0
        current = await self._primary.load(session)
        seen = self._seen.get(session, 0)
        if current.version != seen:
            self._lose(session, f"the store moved on to version {current.version} from {seen}")
            return 0
        reset = session in self._reset
        if reset:
            await self._primary.reset(session)
            self._reset.discard(session)
            current = await self._primary.load(session)
            self._seen[session] = current.version
        record = await self._fallback.load(session)
        if not (record.state or record.meta or record.step):
            return int(reset)  # nothing committed since: the reset was all there was
        try:
            written = await self._primary.commit(
                session, record.changed(), expected_version=current.version
            )
        except VersionConflict as conflict:
            self._lose(session, f"the store moved on to version {conflict.current}")
            return 0
        self._seen[session] = written.version
        return 1

    async def _write_doc(self, session: str, name: str) -> int:
        assert self._fallback is not None
        doc = await self._fallback.get_doc(session, name)
        if session in self._lost or doc is None:
            return 0
        await self._primary.put_doc(session, name, doc)
        return 1

    def _lose(self, session: str, why: str) -> None:
        self._lost.add(session)
        self.failover.lost(session, f"{why}: another gateway wrote it meanwhile")

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
    """An ``ArchiveStore`` over ``primary`` that falls back to memory instead of failing, and
    goes back to ``primary`` once it answers (tried every ``retry_every`` seconds; None:
    never), writing to it what memory took meanwhile.

    While degraded, new spans go to memory, and spans kept before are still read from the
    backing store where it can still read them (a full disk fails writes, not reads)."""

    def __init__(
        self,
        primary: ArchiveStore,
        *,
        max_bytes: int = 256 * 1024 * 1024,
        retry_every: float | None = RETRY_SECONDS,
        reopen: Reopen | None = None,
    ) -> None:
        self._primary = primary
        self._max_bytes = max_bytes
        self._reopen = reopen
        self.failover = Failover("archive store", retry_every=retry_every)
        """Whether it is degraded, and what it could not write back (``unwritten``: the refs
        memory evicted first)."""
        self._fallback = MemoryArchiveStore(max_bytes=max_bytes)
        # What memory took while degraded, in order: ("put", ref), ("entry", entry) or
        # ("forget", session).
        self._backlog: deque[tuple[str, str | ArchiveEntry]] = deque()

    @classmethod
    def failed(cls, error: BaseException) -> Self:
        """A wrapper that is in memory from the start, ``error`` being why (logged)."""
        store = cls(MemoryArchiveStore(), retry_every=None)
        store.failover.fail(error, store._catch_up)
        return store

    @classmethod
    def unopened(
        cls,
        primary: ArchiveStore,
        error: BaseException,
        reopen: Reopen,
        *,
        retry_every: float = RETRY_SECONDS,
    ) -> Self:
        """As ``ResilientStateStore.unopened``."""
        store = cls(primary, retry_every=retry_every, reopen=reopen)
        store.failover.fail(error, store._catch_up)
        return store

    @property
    def degraded(self) -> str | None:
        return self.failover.degraded

    async def put(self, ref: str, data: bytes) -> None:
        if not await self._served(lambda: self._primary.put(ref, data)):
            await self._fallback.put(ref, data)
            self._backlog.append(("put", ref))

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
            self._backlog.append(("entry", entry))

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
            self._backlog.append(("forget", session))
            with contextlib.suppress(Exception):
                served = [await self._primary.forget(session)]
        return sum(served) + await self._fallback.forget(session)

    async def holders(self, ref: str) -> list[str]:
        served = await self._served(lambda: self._primary.holders(ref))
        older = served[0] if served else []
        return sorted({*older, *await self._fallback.holders(ref)})

    async def close(self) -> None:
        await self.failover.close()
        with contextlib.suppress(Exception):
            await self._primary.close()

    async def _served(self, op: Callable[[], Awaitable[T]]) -> list[T]:
        """``[op()]`` when the backing store did ``op``; ``[]`` while degraded, or when it
        just failed (and the wrapper is degraded from now on). Past a failure, reads still try
        the backing store, best effort, for what it held before."""
        if self.degraded is not None:
            return []
        try:
            return [await op()]
        except _CALLER_ERRORS:
            raise
        except Exception as error:
            self.failover.fail(error, self._catch_up)
            return []

    async def _catch_up(self) -> None:
        """Replay what memory took, in order, then serve from the store again; raises (and
        stays in memory) while the store still fails."""
        if self._reopen is not None:
            await self._reopen()
        await self._primary.get(PROBE)
        written = 0
        while self._backlog:
            kind, value = self._backlog[0]
            if isinstance(value, ArchiveEntry):
                await self._primary.add_entry(value)
                written += 1
            elif kind == "forget":
                await self._primary.forget(value)
            elif (data := await self._fallback.get(value)) is None:
                self.failover.lost(value, "evicted from memory before the store answered")
            else:
                await self._primary.put(value, data)
                written += 1
            self._backlog.popleft()
        # Nothing left to replay, and no await since that was checked: switch back now.
        self._fallback = MemoryArchiveStore(max_bytes=self._max_bytes)
        self.failover.recovered(written)
