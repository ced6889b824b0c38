"""Sealing every record at rest under the current data key (``skillstate keys rotate-data``):
the records sealed under an older key of the ring, and those written before sealing was on.

Contract: the work goes table by table in the order of each table's key, a batch of rows at a
time, each batch in a transaction of its own (``BEGIN IMMEDIATE`` on SQLite, ``SELECT ... FOR
UPDATE`` on PostgreSQL), so a gateway using the store goes on serving between batches and a
write of its own is never lost: it waits for the batch, or the batch waits for it. A row's
version, times and sizes are left as they were; only the sealed bytes change, and a record
already under the current key is not written. Blob files are replaced whole, one at a time,
keeping their last use (``BlobStore.reseal``). On SQLite the connection deletes securely
(``secure_delete``), so the bytes a row held before are zeroed rather than left in free pages,
and the write-ahead log is truncated at the end where no reader holds it.

A record that cannot be opened (a key the ring lacks) stops the work with ``SealError``; what
was done before it stays done, and running it again goes on.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skillstate.storage.blobs import BlobStore
from skillstate.storage.postgres import PostgresDatabase
from skillstate.storage.sealing import Sealer, identity
from skillstate.storage.sqlite import SQLiteDatabase, transaction

BATCH = 200
"""Rows sealed in one transaction: short enough that a gateway's write waits milliseconds."""

Progress = Callable[[str, int, int], None]
"""Told after each batch: the table, rows sealed again so far, rows already under the key."""


@dataclass(frozen=True, slots=True)
class _Table:
    """A table of sealed values: its key columns and its sealed columns, each with the label
    its identity starts with (``sealing.identity(label, *key)``) and whether it is text."""

    name: str
    keys: tuple[str, ...]
    values: tuple[tuple[str, str, bool], ...]


_TABLES = (
    _Table("sessions", ("session",), (("state", "state", False), ("meta", "meta", False))),
    _Table("documents", ("session", "name"), (("doc", "doc", False),)),
    _Table("archive_entries", ("session", "ref", "first_turn"), (("summary", "summary", True),)),
)
_BLOBS = _Table("blobs", ("ref",), (("data", "blob", False),))
"""PostgreSQL's archive blobs (on SQLite they are files: ``BlobStore.reseal``)."""


@dataclass(slots=True)
class Resealed:
    """What a run did, per table (and ``blobs``): ``(sealed again, already current)``."""

    counts: dict[str, tuple[int, int]]

    @property
    def resealed(self) -> int:
        return sum(done for done, _ in self.counts.values())

    @property
    def current(self) -> int:
        return sum(kept for _, kept in self.counts.values())


def _resealed(value: Any, sealer: Sealer, record: bytes, text: bool) -> Any:
    """``value`` sealed under the current key; None where it already is (or is empty text)."""
    if text:
        if not value or sealer.is_current_text(value):
            return None
        return sealer.seal_text(sealer.open_text(value, record), record)
    if sealer.is_current(value):
        return None
    return sealer.seal(sealer.open(value, record), record)


def _changes(table: _Table, rows: list[Any], sealer: Sealer) -> tuple[list[tuple[Any, ...]], int]:
    """The updates of a batch, as ``(*new values, *key)``, and how many rows were current."""
    width = len(table.keys)
    updates = []
    current = 0
    for row in rows:
        key = tuple(row[:width])
        names = [str(part) for part in key]
        new = [
            _resealed(row[width + n], sealer, identity(label, *names), text)
            for n, (_, label, text) in enumerate(table.values)
        ]
        if all(value is None for value in new):
            current += 1
            continue
        kept = [row[width + n] if value is None else value for n, value in enumerate(new)]
        updates.append((*kept, *key))
    return updates, current


# SQLite --------------------------------------------------------------------------------------


async def reseal_sqlite(
    db: SQLiteDatabase, blobs: BlobStore | None, sealer: Sealer, progress: Progress
) -> Resealed:
    """Every record of the SQLite database, and the blob files, under ``sealer``'s key."""
    await db.run(lambda conn: conn.execute("PRAGMA secure_delete=ON"))
    counts: dict[str, tuple[int, int]] = {}
    for table in _TABLES:
        counts[table.name] = await _sqlite_table(db, table, sealer, progress)
    if blobs is not None:
        blobs.sealer = sealer
        counts["blobs"] = await blobs.reseal()
        progress("blobs", *counts["blobs"])
    await db.run(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
    return Resealed(counts)


async def _sqlite_table(
    db: SQLiteDatabase, table: _Table, sealer: Sealer, progress: Progress
) -> tuple[int, int]:
    keys = ", ".join(table.keys)
    columns = ", ".join(name for name, _, _ in table.values)
    marks = ", ".join("?" for _ in table.keys)
    select = (
        f"SELECT {keys}, {columns} FROM {table.name} WHERE ({keys}) > ({marks})"
        f" ORDER BY {keys} LIMIT {BATCH}"
    )
    first = f"SELECT {keys}, {columns} FROM {table.name} ORDER BY {keys} LIMIT {BATCH}"
    update = (
        f"UPDATE {table.name} SET {', '.join(f'{name} = ?' for name, _, _ in table.values)}"
        f" WHERE {' AND '.join(f'{key} = ?' for key in table.keys)}"
    )
    after: tuple[Any, ...] | None = None
    done = kept = 0
    while True:

        def batch(conn: sqlite3.Connection, after: tuple[Any, ...] | None = after) -> Any:
            with transaction(conn):
                rows = conn.execute(first if after is None else select, after or ()).fetchall()
                updates, current = _changes(table, rows, sealer)
                conn.executemany(update, updates)
            return rows, len(updates), current

        rows, sealed, current = await db.run(batch)
        done, kept = done + sealed, kept + current
        if rows:
            progress(table.name, done, kept)
        if len(rows) < BATCH:
            return done, kept
        after = tuple(rows[-1][: len(table.keys)])


# PostgreSQL ----------------------------------------------------------------------------------


async def reseal_postgres(db: PostgresDatabase, sealer: Sealer, progress: Progress) -> Resealed:
    """Every record of the shared database (blobs included) under ``sealer``'s key."""
    counts = {}
    for table in (*_TABLES, _BLOBS):
        counts[table.name] = await _postgres_table(db, table, sealer, progress)
    return Resealed(counts)


async def _postgres_table(
    db: PostgresDatabase, table: _Table, sealer: Sealer, progress: Progress
) -> tuple[int, int]:
    name = f"skillstate_{table.name}"
    keys = ", ".join(table.keys)
    columns = ", ".join(column for column, _, _ in table.values)
    marks = ", ".join(f"${n}" for n in range(1, len(table.keys) + 1))
    select = (
        f"SELECT {keys}, {columns} FROM {name} WHERE ({keys}) > ({marks})"
        f" ORDER BY {keys} LIMIT {BATCH} FOR UPDATE"
    )
    first = f"SELECT {keys}, {columns} FROM {name} ORDER BY {keys} LIMIT {BATCH} FOR UPDATE"
    width = len(table.values)
    sets = ", ".join(f"{column} = ${n}" for n, (column, _, _) in enumerate(table.values, 1))
    where = " AND ".join(f"{key} = ${n}" for n, key in enumerate(table.keys, width + 1))
    update = f"UPDATE {name} SET {sets} WHERE {where}"
    after: tuple[Any, ...] | None = None
    done = kept = 0
    while True:
        async with db.pool.acquire() as conn, conn.transaction():
            rows = await (conn.fetch(first) if after is None else conn.fetch(select, *after))
            updates, current = _changes(table, [tuple(row) for row in rows], sealer)
            if updates:
                await conn.executemany(update, updates)
        done, kept = done + len(updates), kept + current
        if rows:
            progress(table.name, done, kept)
        if len(rows) < BATCH:
            return done, kept
        after = tuple(rows[-1][: len(table.keys)])
