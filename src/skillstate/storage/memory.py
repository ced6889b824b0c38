"""In-memory twins of the stores: the same behaviour as SQLite, for tests and as the fallback
when the disk fails. Values are kept as encoded JSON, so a caller that mutates what it loaded
or committed changes nothing stored, and sizes match the SQLite backend's."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from skillstate.conversation import Json
from skillstate.storage.protocols import (
    MAX_DOC_BYTES,
    MAX_STATE_BYTES,
    ArchiveEntry,
    Change,
    SessionInfo,
    StateRecord,
    StoreLimitError,
    Updater,
    VersionConflict,
)
from skillstate.storage.records import (
    EMPTY,
    check_key,
    check_session,
    decode_object,
    encode_object,
)
from skillstate.storage.updates import SessionLocks, run_update

Clock = Callable[[], float]


@dataclass(slots=True)
class _Row:
    state: bytes
    meta: bytes
    version: int
    step: int
    live: bool
    created: float
    seen: float


class MemoryStateStore:
    """``StateStore`` in a dict. ``records`` seeds it (how the resilient wrapper carries the
    sessions it has seen over to memory); a seeded record with a version is a live session."""

    def __init__(
        self, *, clock: Clock = time.time, records: Mapping[str, StateRecord] | None = None
    ) -> None:
        self._clock = clock
        self._rows: dict[str, _Row] = {}
        self._docs: dict[tuple[str, str], bytes] = {}
        self._locks = SessionLocks()
        now = clock()
        for session, record in (records or {}).items():
            state = encode_object(record.state, MAX_STATE_BYTES, "a state")
            meta = encode_object(record.meta, MAX_STATE_BYTES, "a state's meta")
            live = record.version > 0
            self._rows[session] = _Row(state, meta, record.version, record.step, live, now, now)

    async def load(self, session: str) -> StateRecord:
        check_session(session)
        row = self._rows.get(session)
        if row is None:
            return StateRecord({}, 0)
        return StateRecord(decode_object(row.state), row.version, row.step, decode_object(row.meta))

    async def commit(self, session: str, change: Change, *, expected_version: int) -> StateRecord:
        check_session(session)
        state = encode_object(change.state, MAX_STATE_BYTES, "a state")
        meta = encode_object(change.meta, MAX_STATE_BYTES, "a state's meta")
        row = self._rows.get(session)
        current = row.version if row else 0
        if current != expected_version:
            raise VersionConflict(session, expected_version, current)
        now = self._clock()
        created = row.created if row and row.live else now
        self._rows[session] = _Row(state, meta, current + 1, change.step, True, created, now)
        return StateRecord(decode_object(state), current + 1, change.step, decode_object(meta))

    async def update(self, session: str, updater: Updater) -> StateRecord:
        async def commit(name: str, change: Change, expected: int) -> StateRecord:
            return await self.commit(name, change, expected_version=expected)

        return await run_update(self.load, commit, self._locks, session, updater)

    async def touch(self, session: str) -> None:
        check_session(session)
        row = self._rows.get(session)
        if row is not None and row.live:
            row.seen = self._clock()

    async def list_sessions(self) -> list[SessionInfo]:
        infos = [
            SessionInfo(
                name, row.version, row.step, len(row.state), len(row.meta), row.created, row.seen
            )
            for name, row in self._rows.items()
            if row.live
        ]
        return sorted(infos, key=lambda info: (-info.last_seen, info.session))

    async def reset(self, session: str) -> bool:
        check_session(session)
        for key in [key for key in self._docs if key[0] == session]:
            del self._docs[key]
        row = self._rows.get(session)
        if row is None or not row.live:
            return False
        self._rows[session] = _Row(EMPTY, EMPTY, row.version + 1, 0, False, row.created, row.seen)
        return True

    async def get_doc(self, session: str, name: str) -> Json | None:
        check_session(session)
        raw = self._docs.get((session, name))
        return None if raw is None else decode_object(raw)

    async def put_doc(self, session: str, name: str, doc: Json) -> None:
        check_session(session)
        self._docs[(session, name)] = encode_object(doc, MAX_DOC_BYTES, f"document {name!r}")

    async def close(self) -> None:
        return None


class MemoryArchiveStore:
    """``ArchiveStore`` in a dict, bounded by ``max_bytes`` with least-recently-used
    eviction like the blob files."""

    def __init__(self, *, max_bytes: int = 256 * 1024 * 1024) -> None:
        self._max_bytes = max_bytes
        self._blobs: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        self._entries: dict[str, dict[tuple[str, int], ArchiveEntry]] = {}

    async def put(self, ref: str, data: bytes) -> None:
        check_key(ref)
        if ref in self._blobs:
            self._blobs.move_to_end(ref)
            return
        if len(data) > self._max_bytes:
            raise StoreLimitError(f"a blob of {len(data)} bytes is over the archive's quota")
        self._blobs[ref] = bytes(data)
        self._size += len(data)
        while self._size > self._max_bytes:
            _, evicted = self._blobs.popitem(last=False)
            self._size -= len(evicted)

    async def get(self, ref: str) -> bytes | None:
        check_key(ref)
        data = self._blobs.get(ref)
        if data is not None:
            self._blobs.move_to_end(ref)
        return data

    async def add_entry(self, entry: ArchiveEntry) -> None:
        check_session(entry.session)
        kept = self._entries.setdefault(entry.session, {})
        kept.setdefault((entry.ref, entry.first_turn), entry)

    async def entries(self, session: str) -> list[ArchiveEntry]:
        kept = self._entries.get(session, {}).values()
        return sorted(kept, key=lambda e: (e.first_turn, e.last_turn, e.ref))

    async def forget(self, session: str) -> int:
        return len(self._entries.pop(session, {}))

    async def holders(self, ref: str) -> list[str]:
        return sorted(
            session for session, kept in self._entries.items() if any(key[0] == ref for key in kept)
        )

    async def close(self) -> None:
        return None
