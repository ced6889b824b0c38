"""The default archive: its index in the SQLite database, its blobs as files (``BlobStore``).

Besides the ``ArchiveStore`` protocol it answers what ``skillstate archive`` asks of the whole
archive: every session's entries, which refs still have their blob, and a cleanup that drops
expired blobs and the index rows left without one.

With a sealer (the blob store's, ``BlobStore.sealer``) an entry's summary is sealed too
(``storage.sealing``: ``summary_record``); its session, ref, turns, size and time are not.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from dataclasses import dataclass
from functools import partial

from skillstate.storage.blobs import BlobStore
from skillstate.storage.protocols import ArchiveEntry
from skillstate.storage.records import check_key, check_session, opened_entry, sealed_entry
from skillstate.storage.sealing import Sealer
from skillstate.storage.sqlite import SQLiteDatabase, transaction


@dataclass(frozen=True, slots=True)
class Cleanup:
    """What one ``cleanup`` removed: the keys of the expired blob files it deleted, the refs
    whose index rows it dropped (their blob expired or was evicted), and how many rows."""

    expired_blobs: tuple[str, ...]
    dropped_refs: tuple[str, ...]
    dropped_rows: int


class SQLiteArchiveStore:
    """``ArchiveStore``: index rows in ``db``, bytes in ``blobs``."""

    def __init__(self, db: SQLiteDatabase, blobs: BlobStore) -> None:
        self._db = db
        self.blobs = blobs

    async def put(self, ref: str, data: bytes) -> None:
        await self.blobs.put(ref, data)

    async def get(self, ref: str) -> bytes | None:
        return await self.blobs.get(ref)

    async def add_entry(self, entry: ArchiveEntry) -> None:
        check_session(entry.session)
        await self._db.run(partial(_add, sealed_entry(entry, self.blobs.sealer)))

    async def entries(self, session: str) -> list[ArchiveEntry]:
        check_session(session)
        return await self._db.run(partial(_entries, session, self.blobs.sealer))

    async def forget(self, session: str) -> int:
        check_session(session)
        return await self._db.run(partial(_forget, session))

    async def holders(self, ref: str) -> list[str]:
        check_key(ref)
        return await self._db.run(partial(_holders, ref))

    async def all_entries(
        self, session: str | None = None, *, limit: int | None = None
    ) -> list[ArchiveEntry]:
        """Every session's entries (or ``session``'s), newest first, at most ``limit``."""
        if session is not None:
            check_session(session)
        return await self._db.run(partial(_all_entries, session, limit, self.blobs.sealer))

    async def kept(self, refs: Collection[str]) -> set[str]:
        """Those of ``refs`` whose blob is still there; looking is not a use."""
        return await self.blobs.kept(refs)

    async def cleanup(self) -> Cleanup:
        """Delete the expired blobs now, then the index rows whose blob is gone."""
        expired = await self.blobs.expire()
        refs = {entry.ref for entry in await self.all_entries()}
        gone = sorted(refs - await self.blobs.kept(refs))
        rows = await self._db.run(partial(_drop, gone)) if gone else 0
        return Cleanup(tuple(expired), tuple(gone), rows)

    async def close(self) -> None:
        return None  # the database is closed by whoever opened it


def _add(entry: ArchiveEntry, conn: sqlite3.Connection) -> None:
    with transaction(conn):
        conn.execute(
            "INSERT OR IGNORE INTO archive_entries VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                entry.session,
                entry.ref,
                entry.first_turn,
                entry.last_turn,
                entry.summary,
                entry.size,
                entry.created,
            ),
        )


def _entries(session: str, sealer: Sealer | None, conn: sqlite3.Connection) -> list[ArchiveEntry]:
    rows = conn.execute(
        "SELECT session, ref, first_turn, last_turn, summary, size, created"
        " FROM archive_entries WHERE session = ? ORDER BY first_turn, last_turn, ref",
        (session,),
    ).fetchall()
    return [opened_entry(row, sealer) for row in rows]


def _holders(ref: str, conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT DISTINCT session FROM archive_entries WHERE ref = ? ORDER BY session", (ref,)
    ).fetchall()
    return [session for (session,) in rows]


def _forget(session: str, conn: sqlite3.Connection) -> int:
    with transaction(conn):
        cursor = conn.execute("DELETE FROM archive_entries WHERE session = ?", (session,))
        return cursor.rowcount


def _all_entries(
    session: str | None, limit: int | None, sealer: Sealer | None, conn: sqlite3.Connection
) -> list[ArchiveEntry]:
    query = (
        "SELECT session, ref, first_turn, last_turn, summary, size, created FROM archive_entries"
    )
    params: list[object] = []
    if session is not None:
        query += " WHERE session = ?"
        params.append(session)
    query += " ORDER BY created DESC, session, first_turn, ref"
    if limit is not None:
        query += " LIMIT ?"
        params.append(limit)
    return [opened_entry(row, sealer) for row in conn.execute(query, params).fetchall()]


def _drop(refs: list[str], conn: sqlite3.Connection) -> int:
    with transaction(conn):
        return sum(
            conn.execute("DELETE FROM archive_entries WHERE ref = ?", (ref,)).rowcount
            for ref in refs
        )
