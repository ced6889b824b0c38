"""The ledger in the shared PostgreSQL database (``store = "postgresql://..."``): /cost on any
gateway sharing the database sums the rows of all of them.

The table, ``skillstate_ledger``, is made by the store's schema migrations
(``storage.postgres.MIGRATIONS``); its columns are the SQLite ledger's, one per ``Row`` field.

Rows are written in the recorder's batches (one flusher per process, ``recorder``), each in
one ``executemany`` on a connection of the ledger's own (made again where the server dropped
it): asyncpg binds the one prepared INSERT once per row and ends the lot with a single Sync,
so a batch is one round trip and one transaction, all its rows or none. The instances only
ever insert, never update a row, so their writes take no lock another waits on (LiteLLM's
proxy deadlocked with ten instances updating the same spend rows). The retention
sweep deletes under an advisory lock it only tries for: while one instance sweeps the others
skip it, since it is idempotent, and nobody waits. ``make`` (the recorder's counting and
hashing) runs on a worker thread, off the event loop, as it runs on SQLite's thread there.

A database that fails (a write, a read or a sweep), or that could not be reached at start, is
logged once, and the ledger goes on in its fallback: the SQLite ledger under the data
directory where there is one, else memory (``store.Ledger``, which has the same rule for its
own disk). ``degraded`` says why and /cost carries it; /cost then sums the fallback's rows:
this instance's since the failure, and what that ledger held before. At the first batch
``RETRY_SECONDS`` after, and after each failed try, the database is tried again: the rows the
fallback took since the failure are copied to it (in id order, a thousand a statement, so a
try cut short goes on where it stopped), and the ledger is back on it.

PostgreSQL's text refuses NUL, which SQLite keeps: a model name a client sent with one would
have its whole batch refused, so a NUL is written as U+FFFD."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from skillstate.economics.ledger.dialect import POSTGRES, Sql
from skillstate.economics.ledger.row import COLUMNS, Row
from skillstate.economics.ledger.store import Ledger
from skillstate.storage.failover import RETRY_SECONDS
from skillstate.storage.postgres import PostgresDatabase
from skillstate.storage.sqlite import SQLiteDatabase

log = logging.getLogger("skillstate.economics.ledger")

_INSERT = (
    f"INSERT INTO {POSTGRES.table} ({', '.join(COLUMNS)}) "
    f"VALUES ({', '.join(POSTGRES.mark(n) for n in range(1, len(COLUMNS) + 1))})"
)
_KEPT = f"SELECT id, {', '.join(COLUMNS)} FROM ledger WHERE id > ? ORDER BY id LIMIT 1000"
"""The fallback's rows kept since an id, to copy to the database once it answers."""
_SWEEP_LOCK = 0x5C1_1ED6E
"""The advisory lock a sweep tries for (any constant: it only has to be this code's)."""
_SWEEP = (
    f"WITH gone AS (DELETE FROM {POSTGRES.table} WHERE ts < $1 RETURNING 1)"
    " SELECT count(*) FROM gone"
)


class PostgresLedger:
    """``store.LedgerStore`` in a ``PostgresDatabase``. Build it with ``open``."""

    def __init__(
        self,
        db: PostgresDatabase,
        fallback: Ledger,
        *,
        retry_every: float = RETRY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._db = db
        self._fallback = fallback
        self._failed: str | None = None
        self._retry_every = retry_every
        self._clock = clock
        self._retry_at = 0.0
        self._copied: int | None = None
        """The fallback's newest row id the database has (None: not known yet)."""
        self._writer: Any = None
        """The connection the batches are written on, the ledger's own from the first batch
        to ``close``: a batch through the pool cost the event loop three times the Python
        (and its release resets the connection: one more round trip)."""

    @classmethod
    async def open(
        cls, db: PostgresDatabase, local: SQLiteDatabase | None, *, failed: str | None = None
    ) -> PostgresLedger:
        """The ledger in ``db``, falling back to the SQLite ledger on ``local`` (in memory
        where None); ``failed``: why the database could not be reached at start (the ledger
        starts on its fallback, and tries the database again)."""
        ledger = cls(db, await Ledger.open(local))
        if failed is not None:
            ledger._fail(RuntimeError(failed))
        return ledger

    @property
    def degraded(self) -> str | None:
        return self._failed or self._fallback.degraded

    async def append(self, rows: Sequence[Row]) -> None:
        await self._write(rows, [_values(row) for row in rows])

    async def append_made(self, make: Callable[[], list[Row]]) -> list[Row]:
        """Make rows, and their values as written, on a worker thread; append them; the rows
        made."""
        if self._failed is not None and not await self._recovered():
            await self._mark()
            return await self._fallback.append_made(make)

        def made() -> tuple[list[Row], list[tuple[object, ...]]]:
            rows = make()
            return rows, [_values(row) for row in rows]

        rows, values = await asyncio.to_thread(made)
        await self._write(rows, values)
        return rows

    async def _write(self, rows: Sequence[Row], values: list[tuple[object, ...]]) -> None:
        if not rows:
            return
        if self._failed is None or await self._recovered():
            try:
                if self._writer is None or self._writer.is_closed():  # first, or restarted
                    self._writer = await self._db.connect()
                await self._writer.executemany(_INSERT, values)
                return
            except Exception as error:
                self._fail(error)
        await self._mark()
        await self._fallback.append(rows)

    async def query(self, sql: str | Sql, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """``LedgerStore.query``: on PostgreSQL, or on the fallback once the database failed
        (text is the caller's to write for the table that answers)."""
        if self._failed is None:
            text = sql if isinstance(sql, str) else sql(POSTGRES)
            try:
                return [tuple(row) for row in await self._db.pool.fetch(text, *params)]
            except Exception as error:
                self._fail(error)
        return await self._fallback.query(sql, params)

    async def sweep(self, before: float) -> int:
        """Remove the rows older than ``before``; how many went (0 where another instance
        is sweeping them now)."""
        if self._failed is None:
            try:
                async with self._db.pool.acquire() as conn, conn.transaction():
                    if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", _SWEEP_LOCK):
                        return 0
                    return int(await conn.fetchval(_SWEEP, before))
            except Exception as error:
                self._fail(error)
        return await self._fallback.sweep(before)

    async def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(Exception):
                await writer.close(timeout=1.0)
        await self._fallback.close()  # the database is closed by whoever opened it

    def _fail(self, error: Exception) -> None:
        self._retry_at = self._clock() + self._retry_every
        if self._failed is None:
            self._failed = (
                f"the ledger's PostgreSQL database failed ({type(error).__name__}: {error});"
                f" this instance's rows are kept in {self._fallback.where} until it answers"
            )
            log.warning("ledger: %s", self._failed)

    async def _recovered(self) -> bool:
        """Whether the database, tried again where it is time to, took the rows the fallback
        kept since it failed, and serves again. Batches come one at a time (the recorder's
        one flusher), so no row reaches the fallback while they are copied."""
        if self._clock() < self._retry_at:
            return False
        self._retry_at = self._clock() + self._retry_every
        try:
            await self._db.ensure()
            if self._writer is None or self._writer.is_closed():
                self._writer = await self._db.connect()
            copied = await self._copy()
        except Exception as error:
            log.debug("ledger: the PostgreSQL database still fails: %s", error)
            return False
        log.warning(
            "ledger: the PostgreSQL database answers again (down: %s); %d rows kept meanwhile"
            " copied to it",
            self._failed,
            copied,
        )
        self._failed, self._copied = None, None
        return True

    async def _mark(self) -> None:
        """Before the fallback's first row since the failure: note its newest id, so that the
        rows after it are the ones to copy."""
        if self._copied is None:
            (newest,) = await self._fallback.query("SELECT COALESCE(MAX(id), 0) FROM ledger")
            self._copied = int(newest[0])

    async def _copy(self) -> int:
        """Copy the fallback's rows newer than ``_copied`` (none where it took none)."""
        if self._copied is None:
            return 0
        copied = 0
        while rows := await self._fallback.query(_KEPT, [self._copied]):
            await self._writer.executemany(_INSERT, [_values(_row(row[1:])) for row in rows])
            self._copied = int(rows[-1][0])
            copied += len(rows)
        return copied


def _row(values: Sequence[Any]) -> Row:
    """A row as the SQLite ledger gave it back (its flags as 0 or 1)."""
    row = dict(zip(COLUMNS, values, strict=True))
    for flag in ("streamed", "estimated"):
        row[flag] = bool(row[flag])
    return Row(**row)


def _values(row: Row) -> tuple[object, ...]:
    values = row.values()
    if any(isinstance(value, str) and "\x00" in value for value in values):
        return tuple(v.replace("\x00", "\ufffd") if isinstance(v, str) else v for v in values)
    return values
