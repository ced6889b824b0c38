"""The default store: one SQLite file in WAL mode under the data directory.

One connection lives on one dedicated thread, so the event loop never blocks on the disk and
the connection is never shared between threads. Every write is one ``BEGIN IMMEDIATE``
transaction, which also serializes writers from other processes on the same file (they wait up
to ``busy_timeout`` seconds).

Durability: WAL with ``synchronous=NORMAL``. A commit that returned is in the WAL file, so a
crash of the process (SIGKILL included) loses nothing; a power cut may lose the last commits
but never corrupts the database. ``synchronous="FULL"`` trades an fsync per commit for the
power-cut case too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Literal, TypeVar

from skillstate.conversation import Json
from skillstate.storage.protocols import (
    MAX_DOC_BYTES,
    Change,
    SessionInfo,
    StateRecord,
    Updater,
    VersionConflict,
)
from skillstate.storage.records import (
    EMPTY,
    check_session,
    encoded_change,
    opened_object,
    sealed_object,
)
from skillstate.storage.sealing import Sealer
from skillstate.storage.updates import SessionLocks

DB_NAME = "skillstate.db"
T = TypeVar("T")
Synchronous = Literal["NORMAL", "FULL"]
PAGE_CACHE_KIB = 512
"""SQLite's page cache for the connection. Its default (2,000 KiB) fills as the file grows and
stays resident on the database thread's heap for the life of the process; the gateway's reads
are a session's record and documents and the ledger's newest rows, a few pages each, and a page
that is not cached is read again from the system's file cache."""

_TABLES = (
    """CREATE TABLE IF NOT EXISTS sessions (
        session TEXT PRIMARY KEY, version INTEGER NOT NULL, step INTEGER NOT NULL,
        state BLOB NOT NULL, meta BLOB NOT NULL, live INTEGER NOT NULL,
        created REAL NOT NULL, seen REAL NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS documents (
        session TEXT NOT NULL, name TEXT NOT NULL, doc BLOB NOT NULL, updated REAL NOT NULL,
        PRIMARY KEY (session, name))""",
    """CREATE TABLE IF NOT EXISTS archive_entries (
        session TEXT NOT NULL, ref TEXT NOT NULL, first_turn INTEGER NOT NULL,
        last_turn INTEGER NOT NULL, summary TEXT NOT NULL, size INTEGER NOT NULL,
        created REAL NOT NULL, PRIMARY KEY (session, ref, first_turn))""",
)

_AUDIT = (
    # The audit log (``storage.audit``): append-only, here as in PostgreSQL.
    """CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, who TEXT NOT NULL,
        action TEXT NOT NULL, target TEXT NOT NULL, detail TEXT NOT NULL)""",
    "CREATE INDEX audit_at ON audit (at)",
    """CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END""",
    """CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END""",
)

_KEYS = (
    """CREATE TABLE virtual_keys (
        digest TEXT PRIMARY KEY, tenant TEXT NOT NULL, created REAL NOT NULL,
        admin INTEGER NOT NULL, expires REAL, revoked REAL, models TEXT NOT NULL)""",
)
"""The virtual keys (``storage.keys``)."""

_BUDGETS = (
    "ALTER TABLE virtual_keys ADD COLUMN budget_usd REAL",
    "ALTER TABLE virtual_keys ADD COLUMN period TEXT NOT NULL DEFAULT 'month'",
    "ALTER TABLE virtual_keys ADD COLUMN rpm INTEGER",
    "ALTER TABLE virtual_keys ADD COLUMN tpm INTEGER",
    """CREATE TABLE budget_spent (
        key_id TEXT NOT NULL, period TEXT NOT NULL, spent REAL NOT NULL,
        PRIMARY KEY (key_id, period))""",
    """CREATE TABLE budget_holds (
        id TEXT PRIMARY KEY, key_id TEXT NOT NULL, period TEXT NOT NULL,
        amount REAL NOT NULL, expires REAL NOT NULL)""",
    "CREATE INDEX budget_holds_key ON budget_holds (key_id, period)",
)
"""The keys' limits (``storage.keys.KeyLimits``) and what each key spent and holds
(``storage.spend``)."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (_TABLES, _AUDIT, _KEYS, _BUDGETS)
"""Each schema version's statements, in order: version N is ``MIGRATIONS[N - 1]``, applied
when the file's ``user_version`` is below N, in the transaction that sets it. Version 1 makes
its tables only where missing, so a file of a gateway from before the versions comes up too;
version 2 adds the audit log. A version once released is never edited."""
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(path: Path) -> int | None:
    """The schema version of the database at ``path``, read without changing it (None: no
    file there yet)."""
    if not path.exists():
        return None
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


class SQLiteDatabase:
    """A SQLite file and the thread that owns its connection. Build it with ``open``."""

    def __init__(self, path: Path, executor: ThreadPoolExecutor, conn: sqlite3.Connection):
        self.path = path
        self._executor = executor
        self._conn = conn

    @classmethod
    async def open(
        cls, path: Path, *, busy_timeout: float = 5.0, synchronous: Synchronous = "NORMAL"
    ) -> SQLiteDatabase:
        """Open (creating, owner-only) the database at ``path`` and bring its schema up."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillstate-sqlite")
        loop = asyncio.get_running_loop()
        connect = partial(_connect, path, busy_timeout, synchronous)
        try:
            conn = await loop.run_in_executor(executor, connect)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(path, executor, conn)

    @classmethod
    async def in_memory(cls) -> SQLiteDatabase:
        """A private database in memory, on a thread of its own, gone when closed."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillstate-sqlite-mem")
        loop = asyncio.get_running_loop()
        conn = await loop.run_in_executor(
            executor, partial(sqlite3.connect, ":memory:", isolation_level=None)
        )
        return cls(Path(":memory:"), executor, conn)

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)`` on the database's thread."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, work, self._conn)

    async def close(self) -> None:
        with contextlib.suppress(RuntimeError):  # already closed
            await self.run(sqlite3.Connection.close)
        await asyncio.to_thread(self._executor.shutdown)


def _connect(path: Path, busy_timeout: float, synchronous: Synchronous) -> sqlite3.Connection:
    make_private(path)
    conn = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
        with transaction(conn):
            found = conn.execute("PRAGMA user_version").fetchone()[0]
            if found > SCHEMA_VERSION:
                raise sqlite3.DatabaseError(
                    f"{path} has schema version {found}, newer than this gateway's"
                    f" {SCHEMA_VERSION}: upgrade skillstate"
                )
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version - 1]:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version={version}")
    except BaseException:
        conn.close()
        raise
    return conn


def make_private(path: Path) -> None:
    """The database's folder owner-only (0700) and the database with its ``-wal`` and ``-shm``
    files owner-only (0600): created so, or tightened where an earlier run, another tool or a
    lax umask left them open. SQLite creates ``-wal`` and ``-shm`` with the database file's
    permissions, so from here on they are 0600 too. A folder or file of another user cannot be
    tightened: that ``PermissionError`` keeps the gateway off the disk (the stores say why)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.fchmod(handle, 0o600)
    finally:
        os.close(handle)
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(f"{path}{suffix}", 0o600)


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One ``BEGIN IMMEDIATE`` transaction: committed on success, rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


class SQLiteStateStore:
    """``StateStore`` on a ``SQLiteDatabase``. With a ``sealer``, Σ, its meta and the
    documents are sealed on disk (``storage.sealing``); the session ids, versions and times
    are not."""

    def __init__(
        self,
        db: SQLiteDatabase,
        *,
        clock: Callable[[], float] = time.time,
        sealer: Sealer | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self._locks = SessionLocks()
        self._sealer = sealer

    async def load(self, session: str) -> StateRecord:
        check_session(session)
        return await self._db.run(partial(_load, session, self._sealer))

    async def commit(self, session: str, change: Change, *, expected_version: int) -> StateRecord:
        check_session(session)
        encoded = encoded_change(session, change, self._sealer)
        row = (encoded.kept_state, encoded.kept_meta, change.step)
        work = partial(_commit, session, row, expected_version, self._clock())
        version = await self._db.run(work)
        return encoded.record(version, change.step)

    async def update(self, session: str, updater: Updater) -> StateRecord:
        """Read, compute and commit in one trip to the database's thread, in one transaction
        (``BEGIN IMMEDIATE``: no other process commits between the read and the write, so
        nothing conflicts); ``updater`` runs on that thread, and must be a pure function of
        the record it is given. This process's updates of a session still take turns
        (``SessionLocks``)."""
        check_session(session)
        async with self._locks.hold(session):
            work = partial(_update, session, updater, self._clock(), self._sealer)
            return await self._db.run(work)

    async def touch(self, session: str) -> None:
        check_session(session)
        sql = "UPDATE sessions SET seen = ? WHERE session = ? AND live = 1"
        await self._db.run(partial(_write, sql, (self._clock(), session)))

    async def list_sessions(self) -> list[SessionInfo]:
        return await self._db.run(_list)

    async def reset(self, session: str) -> bool:
        check_session(session)
        return await self._db.run(partial(_reset, session))

    async def get_doc(self, session: str, name: str) -> Json | None:
        check_session(session)
        sql = "SELECT doc FROM documents WHERE session = ? AND name = ?"
        row = await self._db.run(partial(_one, sql, (session, name)))
        return None if row is None else opened_object(row[0], self._sealer, "doc", session, name)

    async def put_doc(self, session: str, name: str, doc: Json) -> None:
        check_session(session)
        what = f"document {name!r}"
        raw = sealed_object(doc, MAX_DOC_BYTES, what, self._sealer, "doc", session, name)
        sql = "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?)"
        await self._db.run(partial(_write, sql, (session, name, raw, self._clock())))

    async def close(self) -> None:
        return None  # the database is closed by whoever opened it


def _record(session: str, row: tuple[bytes, int, int, bytes], sealer: Sealer | None) -> StateRecord:
    """The record of a ``(state, version, step, meta)`` row."""
    state = opened_object(row[0], sealer, "state", session)
    return StateRecord(state, row[1], row[2], opened_object(row[3], sealer, "meta", session))


def _load(session: str, sealer: Sealer | None, conn: sqlite3.Connection) -> StateRecord:
    sql = "SELECT state, version, step, meta FROM sessions WHERE session = ?"
    row = conn.execute(sql, (session,)).fetchone()
    if row is None:
        return StateRecord({}, 0)
    return _record(session, row, sealer)


def _commit(
    session: str,
    row: tuple[bytes, bytes, int],
    expected: int,
    now: float,
    conn: sqlite3.Connection,
) -> int:
    state, meta, step = row
    with transaction(conn):
        sql = "SELECT version, live, created FROM sessions WHERE session = ?"
        found = conn.execute(sql, (session,)).fetchone()
        current = found[0] if found else 0
        if current != expected:
            raise VersionConflict(session, expected, current)
        created = found[2] if found and found[1] else now
        conn.execute(
            "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, 1, ?, ?)",
            (session, current + 1, step, state, meta, created, now),
        )
    return current + 1


def _update(
    session: str, updater: Updater, now: float, sealer: Sealer | None, conn: sqlite3.Connection
) -> StateRecord:
    with transaction(conn):
        sql = "SELECT state, version, step, meta, live, created FROM sessions WHERE session = ?"
        found = conn.execute(sql, (session,)).fetchone()
        if found is None:
            record, created = StateRecord({}, 0), now
        else:
            record = _record(session, found[:4], sealer)
            created = found[5] if found[4] else now
        change = updater(record)
        if change is None:
            return record
        encoded = encoded_change(session, change, sealer)
        version = record.version + 1
        conn.execute(
            "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, 1, ?, ?)",
            (session, version, change.step, encoded.kept_state, encoded.kept_meta, created, now),
        )
    return encoded.record(version, change.step)


def _reset(session: str, conn: sqlite3.Connection) -> bool:
    with transaction(conn):
        conn.execute("DELETE FROM documents WHERE session = ?", (session,))
        cursor = conn.execute(
            "UPDATE sessions SET state = ?, meta = ?, step = 0, version = version + 1, live = 0"
            " WHERE session = ? AND live = 1",
            (EMPTY, EMPTY, session),
        )
        return cursor.rowcount > 0


def _list(conn: sqlite3.Connection) -> list[SessionInfo]:
    rows = conn.execute(
        "SELECT session, version, step, length(state), length(meta), created, seen"
        " FROM sessions WHERE live = 1 ORDER BY seen DESC, session"
    ).fetchall()
    return [SessionInfo(*row) for row in rows]


def _one(sql: str, params: tuple[object, ...], conn: sqlite3.Connection) -> tuple[bytes] | None:
    row: tuple[bytes] | None = conn.execute(sql, params).fetchone()
    return row


def _write(sql: str, params: tuple[object, ...], conn: sqlite3.Connection) -> None:
    with transaction(conn):
        conn.execute(sql, params)
