"""The shared store: sessions' Σ, their documents and the archive in one PostgreSQL database,
for several gateway processes and machines (the ``shared`` extra: asyncpg).

The tables are the SQLite store's, named with a ``skillstate_`` prefix so that they can share a
database with anything else, and one more: ``skillstate_blobs``, the archive's
content-addressed blobs, compressed as the file store compresses them (``codec.pack``). The
ledger's table (``skillstate_ledger``) is made here too; ``economics.ledger.postgres_ledger``
reads and writes it; so is the audit log's (``skillstate_audit``, ``storage.audit``), which a
trigger keeps append-only.

Concurrency: a commit is one statement guarded by the version it read (an ``UPDATE ... WHERE
version = $expected``, or for a session's first commit an ``INSERT ... ON CONFLICT DO
NOTHING``), so two instances that read the same version never both commit: the second gets
``VersionConflict`` and ``update`` reads again and recomputes (``updates.run_update``); an
update's ``updater`` must therefore be a pure function of the record it is given.

The schema is versioned (``skillstate_schema``, one row per migration applied): ``open``
applies what is missing, each migration in one transaction under an advisory lock, so that
instances starting together apply it once; a database whose schema is newer than this code
is refused (``SchemaTooNew``) rather than written to.

With a sealer (``storage.sealing``) Σ, its meta, the documents, the blobs and the archive
entries' summaries are sealed before they reach the database; ids, versions, sizes and times
are not.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from skillstate.conversation import Json
from skillstate.storage.codec import default_codec, pack, unpack
from skillstate.storage.protocols import (
    MAX_DOC_BYTES,
    ArchiveEntry,
    Change,
    SessionInfo,
    StateRecord,
    Updater,
    VersionConflict,
)
from skillstate.storage.records import (
    EMPTY,
    check_key,
    check_session,
    encoded_change,
    opened_entry,
    opened_object,
    sealed_entry,
    sealed_object,
)
from skillstate.storage.sealing import Sealer, identity, opened
from skillstate.storage.updates import SessionLocks, run_update
from skillstate.support.extras import MissingExtra

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE skillstate_sessions (
            session TEXT PRIMARY KEY, version BIGINT NOT NULL, step BIGINT NOT NULL,
            state BYTEA NOT NULL, meta BYTEA NOT NULL, live BOOLEAN NOT NULL,
            created DOUBLE PRECISION NOT NULL, seen DOUBLE PRECISION NOT NULL)""",
        """CREATE TABLE skillstate_documents (
            session TEXT NOT NULL, name TEXT NOT NULL, doc BYTEA NOT NULL,
            updated DOUBLE PRECISION NOT NULL, PRIMARY KEY (session, name))""",
        """CREATE TABLE skillstate_archive_entries (
            session TEXT NOT NULL, ref TEXT NOT NULL, first_turn BIGINT NOT NULL,
            last_turn BIGINT NOT NULL, summary TEXT NOT NULL, size BIGINT NOT NULL,
            created DOUBLE PRECISION NOT NULL, PRIMARY KEY (session, ref, first_turn))""",
        """CREATE TABLE skillstate_blobs (
            ref TEXT PRIMARY KEY, data BYTEA NOT NULL, used DOUBLE PRECISION NOT NULL)""",
    ),
    (
        # The ledger (``economics.ledger.postgres_ledger``): the columns of the SQLite ledger
        # table, its 64-bit INTEGERs as BIGINT and its 0-or-1 flags as BOOLEAN.
        """CREATE TABLE skillstate_ledger (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            ts DOUBLE PRECISION NOT NULL, request_id TEXT NOT NULL, round BIGINT NOT NULL,
            session TEXT NOT NULL, client_wire TEXT NOT NULL, upstream TEXT NOT NULL,
            model TEXT NOT NULL, mode TEXT NOT NULL, lanes TEXT NOT NULL,
            status BIGINT NOT NULL, streamed BOOLEAN NOT NULL,
            input BIGINT, cached_input BIGINT, cache_write BIGINT, cache_write_1h BIGINT,
            output BIGINT, reasoning BIGINT, cost_usd DOUBLE PRECISION,
            passthrough_input BIGINT, passthrough_cached_input BIGINT,
            passthrough_cache_write BIGINT, passthrough_cost_usd DOUBLE PRECISION,
            overhead_ms DOUBLE PRECISION, upstream_ms DOUBLE PRECISION,
            cause TEXT NOT NULL DEFAULT '', attempts TEXT NOT NULL DEFAULT '',
            estimated BOOLEAN NOT NULL DEFAULT FALSE, estimate_basis TEXT NOT NULL DEFAULT '',
            login TEXT NOT NULL DEFAULT '', cache_verdict TEXT NOT NULL DEFAULT '')""",
        "CREATE INDEX skillstate_ledger_ts ON skillstate_ledger (ts)",
        "CREATE INDEX skillstate_ledger_session ON skillstate_ledger (session, ts)",
    ),
    (
        # The audit log (``storage.audit``): rows are appended, never changed or deleted.
        """CREATE TABLE skillstate_audit (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at DOUBLE PRECISION NOT NULL, who TEXT NOT NULL, action TEXT NOT NULL,
            target TEXT NOT NULL, detail TEXT NOT NULL)""",
        "CREATE INDEX skillstate_audit_at ON skillstate_audit (at)",
        """CREATE OR REPLACE FUNCTION skillstate_audit_append_only() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'skillstate_audit is append-only: % refused', TG_OP; END $$""",
        """CREATE TRIGGER skillstate_audit_append_only
            BEFORE UPDATE OR DELETE ON skillstate_audit
            FOR EACH ROW EXECUTE FUNCTION skillstate_audit_append_only()""",
    ),
    (
        # The virtual keys (``storage.keys``): a key's SHA-256, never its text.
        """CREATE TABLE skillstate_keys (
            digest TEXT PRIMARY KEY, tenant TEXT NOT NULL, created DOUBLE PRECISION NOT NULL,
            admin BOOLEAN NOT NULL, expires DOUBLE PRECISION, revoked DOUBLE PRECISION,
            models TEXT NOT NULL)""",
    ),
    (
        # The keys' limits (``storage.keys.KeyLimits``) and what each key spent and holds
        # (``storage.spend``).
        "ALTER TABLE skillstate_keys ADD COLUMN budget_usd DOUBLE PRECISION",
        "ALTER TABLE skillstate_keys ADD COLUMN period TEXT NOT NULL DEFAULT 'month'",
        "ALTER TABLE skillstate_keys ADD COLUMN rpm BIGINT",
        "ALTER TABLE skillstate_keys ADD COLUMN tpm BIGINT",
        """CREATE TABLE skillstate_budget_spent (
            key_id TEXT NOT NULL, period TEXT NOT NULL, spent DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (key_id, period))""",
        """CREATE TABLE skillstate_budget_holds (
            id TEXT PRIMARY KEY, key_id TEXT NOT NULL, period TEXT NOT NULL,
            amount DOUBLE PRECISION NOT NULL, expires DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX skillstate_budget_holds_key ON skillstate_budget_holds (key_id, period)",
    ),
)
"""Each schema version's statements, in order: version N is ``MIGRATIONS[N - 1]``. A version
once released is never edited: a change to a table is a version of its own."""
SCHEMA_VERSION = len(MIGRATIONS)
CONNECT_TIMEOUT_S = 5.0
"""How long connecting may take before the store counts as down."""
COMMAND_TIMEOUT_S = 15.0
"""How long one statement may take before the store counts as down (a server that stopped
answering without closing its connections)."""
_LOCK = 0x5C1_57A7E
"""The advisory lock a migration holds (any constant: it only has to be this code's)."""


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer skillstate than this one."""


@dataclass(frozen=True, slots=True)
class Migrated:
    """What ``migrate`` found and left: schema versions before and after."""

    before: int
    after: int


def _asyncpg() -> Any:
    try:
        import asyncpg
    except ImportError:
        raise MissingExtra("a postgresql:// store", "asyncpg", "shared") from None
    return asyncpg


class PostgresDatabase:
    """A pool of connections to one database. Build it with ``open``."""

    def __init__(self, pool: Any, dsn: str) -> None:
        self.pool = pool
        self.dsn = dsn
        self._opening: asyncio.Lock | None = None

    @classmethod
    def unopened(cls, dsn: str) -> PostgresDatabase:
        """The database of ``dsn``, not connected yet (it could not be reached at start):
        ``ensure`` connects it; until then every use of ``pool`` fails."""
        return cls(None, dsn)

    async def ensure(self) -> None:
        """Connect and bring the schema up, where not done yet (once, however many ask)."""
        if self.pool is not None:
            return
        self._opening = self._opening or asyncio.Lock()
        async with self._opening:
            if self.pool is None:
                self.pool = (await PostgresDatabase.open(self.dsn)).pool

    @classmethod
    async def open(cls, dsn: str, *, min_size: int = 1, max_size: int = 10) -> PostgresDatabase:
        """Connect to ``dsn`` and bring its schema up."""
        db = await cls.open_unmigrated(dsn, min_size=min_size, max_size=max_size)
        try:
            await db.migrate()
        except BaseException:
            await db.pool.close()
            raise
        return db

    @classmethod
    async def open_unmigrated(
        cls, dsn: str, *, min_size: int = 1, max_size: int = 2
    ) -> PostgresDatabase:
        """Connect to ``dsn`` and leave its schema as it is (``skillstate db``, doctor)."""
        pool = await _asyncpg().create_pool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            timeout=CONNECT_TIMEOUT_S,
            command_timeout=COMMAND_TIMEOUT_S,
        )
        return cls(pool, dsn)

    async def schema_version(self) -> int:
        """The schema version the database is at (0: none of ours)."""
        async with self.pool.acquire() as conn:
            if await conn.fetchval("SELECT to_regclass('skillstate_schema')") is None:
                return 0
            return int(await conn.fetchval("SELECT max(version) FROM skillstate_schema") or 0)

    async def migrate(self) -> Migrated:
        """Apply the migrations the database lacks, each in its own transaction; refuse a
        database newer than this code (``SchemaTooNew``)."""
        async with self.pool.acquire() as conn:
            await conn.execute("SELECT pg_advisory_lock($1)", _LOCK)
            try:
                before = await _made_version(conn)
                if before > SCHEMA_VERSION:
                    raise SchemaTooNew(
                        f"the database's schema is version {before}, newer than this "
                        f"gateway's {SCHEMA_VERSION}: upgrade skillstate"
                    )
                for version in range(before + 1, SCHEMA_VERSION + 1):
                    async with conn.transaction():
                        for statement in MIGRATIONS[version - 1]:
                            await conn.execute(statement)
                        await conn.execute(
                            "INSERT INTO skillstate_schema VALUES ($1, $2)", version, time.time()
                        )
                return Migrated(before, SCHEMA_VERSION)
            finally:
                await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK)

    async def connect(self) -> Any:
        """A connection to the database of its own, outside the pool, for a writer that holds
        one (``economics.ledger.postgres_ledger``); its holder closes it."""
        return await _asyncpg().connect(
            self.dsn, timeout=CONNECT_TIMEOUT_S, command_timeout=COMMAND_TIMEOUT_S
        )

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()


async def _made_version(conn: Any) -> int:
    """The schema version, the table of versions made first where it is missing (under the
    migration's lock: /health's ``schema_version`` only reads)."""
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS skillstate_schema ("
        " version INTEGER PRIMARY KEY, applied DOUBLE PRECISION NOT NULL)"
    )
    found = await conn.fetchval("SELECT max(version) FROM skillstate_schema")
    return int(found or 0)


class PostgresStateStore:
    """``StateStore`` on a ``PostgresDatabase``; Σ, meta and documents sealed by ``sealer``."""

    def __init__(
        self,
        db: PostgresDatabase,
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
        row = await self._db.pool.fetchrow(
            "SELECT state, version, step, meta FROM skillstate_sessions WHERE session = $1",
            session,
        )
        if row is None:
            return StateRecord({}, 0)
        state = opened_object(row[0], self._sealer, "state", session)
        meta = opened_object(row[3], self._sealer, "meta", session)
        return StateRecord(state, row[1], row[2], meta)

    async def commit(self, session: str, change: Change, *, expected_version: int) -> StateRecord:
        check_session(session)
        encoded = encoded_change(session, change, self._sealer)
        state, meta = encoded.kept_state, encoded.kept_meta
        now = self._clock()
        if expected_version == 0:
            version = await self._db.pool.fetchval(
                "INSERT INTO skillstate_sessions VALUES ($1, 1, $2, $3, $4, TRUE, $5, $5)"
                " ON CONFLICT (session) DO NOTHING RETURNING version",
                session,
                change.step,
                state,
                meta,
                now,
            )
        else:
            version = await self._db.pool.fetchval(
                "UPDATE skillstate_sessions SET version = version + 1, step = $3, state = $4,"
                " meta = $5, created = CASE WHEN live THEN created ELSE $6 END, live = TRUE,"
                " seen = $6 WHERE session = $1 AND version = $2 RETURNING version",
                session,
                expected_version,
                change.step,
                state,
                meta,
                now,
            )
        if version is None:
            current = await self._db.pool.fetchval(
                "SELECT version FROM skillstate_sessions WHERE session = $1", session
            )
            raise VersionConflict(session, expected_version, int(current or 0))
        return encoded.record(int(version), change.step)

    async def update(self, session: str, updater: Updater) -> StateRecord:
        """Read, compute and commit, again on a conflict with another instance
        (``updates.run_update``); this process's updates of a session take turns."""
        check_session(session)

        async def commit(name: str, change: Change, expected: int) -> StateRecord:
            return await self.commit(name, change, expected_version=expected)

        return await run_update(self.load, commit, self._locks, session, updater)

    async def touch(self, session: str) -> None:
        check_session(session)
        await self._db.pool.execute(
            "UPDATE skillstate_sessions SET seen = $2 WHERE session = $1 AND live",
            session,
            self._clock(),
        )

    async def list_sessions(self) -> list[SessionInfo]:
        rows = await self._db.pool.fetch(
            "SELECT session, version, step, octet_length(state), octet_length(meta), created,"
            " seen FROM skillstate_sessions WHERE live ORDER BY seen DESC, session"
        )
        return [SessionInfo(*row) for row in rows]

    async def reset(self, session: str) -> bool:
        check_session(session)
        async with self._db.pool.acquire() as conn, conn.transaction():
            await conn.execute("DELETE FROM skillstate_documents WHERE session = $1", session)
            done = await conn.execute(
                "UPDATE skillstate_sessions SET state = $2, meta = $2, step = 0,"
                " version = version + 1, live = FALSE WHERE session = $1 AND live",
                session,
                EMPTY,
            )
        return _count(done) > 0

    async def get_doc(self, session: str, name: str) -> Json | None:
        check_session(session)
        raw = await self._db.pool.fetchval(
            "SELECT doc FROM skillstate_documents WHERE session = $1 AND name = $2",
            session,
            name,
        )
        return None if raw is None else opened_object(raw, self._sealer, "doc", session, name)

    async def put_doc(self, session: str, name: str, doc: Json) -> None:
        check_session(session)
        what = f"document {name!r}"
        raw = sealed_object(doc, MAX_DOC_BYTES, what, self._sealer, "doc", session, name)
        await self._db.pool.execute(
            "INSERT INTO skillstate_documents VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (session, name) DO UPDATE SET doc = $3, updated = $4",
            session,
            name,
            raw,
            self._clock(),
        )

    async def close(self) -> None:
        return None  # the database is closed by whoever opened it


class PostgresArchiveStore:
    """``ArchiveStore``: the index and the blobs in a ``PostgresDatabase``. A blob not used
    (written or read) for ``ttl`` seconds is gone, as in the file store. With a ``sealer``,
    a blob is compressed then sealed, and a summary sealed."""

    def __init__(
        self,
        db: PostgresDatabase,
        *,
        ttl: float = 7 * 24 * 3600.0,
        clock: Callable[[], float] = time.time,
        sealer: Sealer | None = None,
    ) -> None:
        self._db = db
        self._ttl = ttl
        self._clock = clock
        self._codec = default_codec()
        self._sealer = sealer

    async def put(self, ref: str, data: bytes) -> None:
        check_key(ref)
        packed = pack(data, self._codec)
        if self._sealer is not None:
            packed = self._sealer.seal(packed, identity("blob", ref))
        await self._db.pool.execute(
            "INSERT INTO skillstate_blobs VALUES ($1, $2, $3)"
            " ON CONFLICT (ref) DO UPDATE SET used = $3",
            ref,
            packed,
            self._clock(),
        )

    async def get(self, ref: str) -> bytes | None:
        check_key(ref)
        now = self._clock()
        blob = await self._db.pool.fetchval(
            "UPDATE skillstate_blobs SET used = $2 WHERE ref = $1 AND used >= $3 RETURNING data",
            ref,
            now,
            now - self._ttl,
        )
        if blob is None:
            return None
        return unpack(opened(blob, self._sealer, identity("blob", ref)))

    async def add_entry(self, entry: ArchiveEntry) -> None:
        check_session(entry.session)
        entry = sealed_entry(entry, self._sealer)
        await self._db.pool.execute(
            "INSERT INTO skillstate_archive_entries VALUES ($1, $2, $3, $4, $5, $6, $7)"
            " ON CONFLICT DO NOTHING",
            entry.session,
            entry.ref,
            entry.first_turn,
            entry.last_turn,
            entry.summary,
            entry.size,
            entry.created,
        )

    async def entries(self, session: str) -> list[ArchiveEntry]:
        check_session(session)
        rows = await self._db.pool.fetch(
            "SELECT session, ref, first_turn, last_turn, summary, size, created"
            " FROM skillstate_archive_entries WHERE session = $1"
            " ORDER BY first_turn, last_turn, ref",
            session,
        )
        return [opened_entry(tuple(row), self._sealer) for row in rows]

    async def forget(self, session: str) -> int:
        check_session(session)
        done = await self._db.pool.execute(
            "DELETE FROM skillstate_archive_entries WHERE session = $1", session
        )
        return _count(done)

    async def holders(self, ref: str) -> list[str]:
        check_key(ref)
        rows = await self._db.pool.fetch(
            "SELECT DISTINCT session FROM skillstate_archive_entries WHERE ref = $1"
            " ORDER BY session",
            ref,
        )
        return [row[0] for row in rows]

    async def close(self) -> None:
        return None


def _count(status: str) -> int:
    """The rows an ``execute`` status names (``UPDATE 3``, ``DELETE 0``)."""
    return int(status.rsplit(" ", 1)[-1]) if status and status[-1].isdigit() else 0


def table_names() -> Sequence[str]:
    """Every table the schema makes, its own record of versions included."""
    return (
        "skillstate_sessions",
        "skillstate_documents",
        "skillstate_archive_entries",
        "skillstate_blobs",
        "skillstate_ledger",
        "skillstate_audit",
        "skillstate_keys",
        "skillstate_budget_spent",
        "skillstate_budget_holds",
        "skillstate_schema",
    )
