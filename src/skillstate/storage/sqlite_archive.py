"""The default archive: its index in the SQLite database, its blobs as files (``BlobStore``)."""

from __future__ import annotations

import sqlite3
from functools import partial

from skillstate.storage.blobs import BlobStore
from skillstate.storage.protocols import ArchiveEntry
from skillstate.storage.records import check_session
from skillstate.storage.sqlite import SQLiteDatabase, transaction


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
        await self._db.run(partial(_add, entry))

    async def entries(self, session: str) -> list[ArchiveEntry]:
        check_session(session)
        return await self._db.run(partial(_entries, session))

    async def forget(self, session: str) -> int:
        check_session(session)
        return await self._db.run(partial(_forget, session))

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


def _entries(session: str, conn: sqlite3.Connection) -> list[ArchiveEntry]:
    rows = conn.execute(
        "SELECT session, ref, first_turn, last_turn, summary, size, created"
        " FROM archive_entries WHERE session = ? ORDER BY first_turn, last_turn, ref",
        (session,),
    ).fetchall()
    return [ArchiveEntry(*row) for row in rows]


def _forget(session: str, conn: sqlite3.Connection) -> int:
    with transaction(conn):
        cursor = conn.execute("DELETE FROM archive_entries WHERE session = ?", (session,))
        return cursor.rowcount
