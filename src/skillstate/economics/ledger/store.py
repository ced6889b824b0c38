"""The ledger's table, in the gateway's SQLite database (or an in-memory one), and what every
ledger offers (``LedgerStore``: this one, and ``postgres_ledger.PostgresLedger``).

Rows are written in batches, one transaction each, on the database's own thread; reading
sums them in SQL. A database that fails to write is logged once and the ledger goes on in
memory (``degraded`` says why), as the state stores do.

The table grows by columns only: each ``Row`` field is a column, and a field added later
gives its column a default that the rows written before it take. Opening the ledger on a
table an older gateway made adds the columns it lacks (``ALTER TABLE ... ADD COLUMN``, in the
transaction that checks for them), so an upgraded gateway keeps its history and writes on."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from skillstate.economics.ledger.dialect import SQLITE, Sql
from skillstate.economics.ledger.row import COLUMNS, Row
from skillstate.storage.sqlite import SQLiteDatabase, transaction

log = logging.getLogger("skillstate.economics.ledger")

_TYPES = {
    "ts": "REAL NOT NULL",
    "request_id": "TEXT NOT NULL",
    "round": "INTEGER NOT NULL",
    "status": "INTEGER NOT NULL",
    "streamed": "INTEGER NOT NULL",
    "cost_usd": "REAL",
    "passthrough_cost_usd": "REAL",
    "overhead_ms": "REAL",
    "upstream_ms": "REAL",
    "attempts": "TEXT NOT NULL DEFAULT ''",
    "cause": "TEXT NOT NULL DEFAULT ''",
    "estimated": "INTEGER NOT NULL DEFAULT 0",
    "estimate_basis": "TEXT NOT NULL DEFAULT ''",
    "login": "TEXT NOT NULL DEFAULT ''",
    "cache_verdict": "TEXT NOT NULL DEFAULT ''",
}
_TEXT = {"session", "client_wire", "upstream", "model", "mode", "lanes"}


def _declared(name: str) -> str:
    return _TYPES.get(name, "TEXT NOT NULL" if name in _TEXT else "INTEGER")


TABLE = (
    "CREATE TABLE IF NOT EXISTS ledger (id INTEGER PRIMARY KEY, "
    + ", ".join(f"{name} {_declared(name)}" for name in COLUMNS)
    + ")"
)
INDEXES = (
    "CREATE INDEX IF NOT EXISTS ledger_ts ON ledger (ts)",
    "CREATE INDEX IF NOT EXISTS ledger_session ON ledger (session, ts)",
)
_INSERT = f"INSERT INTO ledger ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"


class LedgerStore(Protocol):
    """A ledger's rows, wherever they are kept. ``degraded`` says why they are not where they
    should be (a database that failed), or is None."""

    @property
    def degraded(self) -> str | None: ...

    async def append(self, rows: Sequence[Row]) -> None:
        """Write ``rows``, all in one transaction."""

    async def append_made(self, make: Callable[[], list[Row]]) -> list[Row]:
        """Make rows off the event loop and append them; the rows made."""

    async def query(self, sql: str | Sql, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read-only query over the ledger table: ``sql`` as text, or written for
        the dialect of the table that answers (``dialect.Sql``)."""

    async def sweep(self, before: float) -> int:
        """Remove the rows older than ``before`` (Unix seconds); how many went."""

    async def close(self) -> None: ...


class Ledger:
    """The ledger's rows in SQLite. Build it with ``open`` (on the gateway's database) or
    ``memory``."""

    def __init__(self, db: SQLiteDatabase, *, memory: bool) -> None:
        self._db = db
        self._memory = memory
        self.degraded: str | None = None

    @classmethod
    async def open(cls, db: SQLiteDatabase | None) -> Ledger:
        """The ledger on ``db`` (its table created if missing), or in memory when None or
        when the table cannot be made."""
        if db is not None:
            try:
                await db.run(_create)
                return cls(db, memory=False)
            except sqlite3.Error as error:
                log.warning("ledger: the database refused its table (%s); kept in memory", error)
                ledger = await cls.memory()
                ledger.degraded = f"the database refused the ledger's table: {error}"
                return ledger
        return await cls.memory()

    @property
    def where(self) -> str:
        """Where the rows are kept, in words."""
        return "memory" if self._memory else "the SQLite database under the data directory"

    @classmethod
    async def memory(cls) -> Ledger:
        db = await SQLiteDatabase.in_memory()
        await db.run(_create)
        return cls(db, memory=True)

    async def append(self, rows: Sequence[Row]) -> None:
        if not rows:
            return
        values = [row.values() for row in rows]
        try:
            await self._db.run(lambda conn: _insert(conn, values))
        except sqlite3.Error as error:
            if self._memory:
                raise
            log.warning("ledger: writing to the database failed (%s); kept in memory", error)
            self.degraded = f"writing the ledger failed: {error}"
            self._db, self._memory = await SQLiteDatabase.in_memory(), True
            await self._db.run(_create)
            await self._db.run(lambda conn: _insert(conn, values))

    async def append_made(self, make: Callable[[], list[Row]]) -> list[Row]:
        """Make rows and append them in one trip to the database's thread (``make`` runs
        there, off the event loop); the rows made."""
        made: list[Row] = []

        def work(conn: sqlite3.Connection) -> None:
            made.extend(make())
            if made:
                _insert(conn, [row.values() for row in made])

        try:
            await self._db.run(work)
        except sqlite3.Error:
            if self._memory or not made:
                raise
            await self.append(made)  # the database failed to write them: kept in memory
        return made

    async def query(self, sql: str | Sql, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read-only ``sql`` over the ledger table (``LedgerStore.query``)."""
        text = sql if isinstance(sql, str) else sql(SQLITE)
        return await self._db.run(lambda conn: conn.execute(text, params).fetchall())

    async def sweep(self, before: float) -> int:
        """Remove the rows older than ``before`` (Unix seconds); how many went."""

        def work(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                return conn.execute("DELETE FROM ledger WHERE ts < ?", (before,)).rowcount

        return await self._db.run(work)

    async def close(self) -> None:
        if self._memory:
            await self._db.close()  # the gateway's own database is closed by its owner


def _create(conn: sqlite3.Connection) -> None:
    with transaction(conn):
        conn.execute(TABLE)
        had = {row[1] for row in conn.execute("PRAGMA table_info(ledger)")}
        for name in COLUMNS:
            if name not in had:  # a table an older gateway made: the column came later
                conn.execute(f"ALTER TABLE ledger ADD COLUMN {name} {_declared(name)}")
        for index in INDEXES:
            conn.execute(index)


def _insert(conn: sqlite3.Connection, values: list[tuple[object, ...]]) -> None:
    with transaction(conn):
        conn.executemany(_INSERT, values)
