"""The audit log's contract on memory, SQLite and PostgreSQL (newest first, the filters, the
limit); UPDATE and DELETE refused by the database itself; the schema versions that add it
brought up from the version before, with what the database held kept; and a store that
refuses a write, which keeps the entry in memory and writes it once it can again."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import pytest
from storage_support import BACKENDS, Clock, postgres_database, postgres_dsn

from skillstate.storage import Change, SQLiteDatabase, SQLiteStateStore
from skillstate.storage.audit import (
    AuditEntry,
    AuditLog,
    MemoryAudit,
    PostgresAudit,
    SQLiteAudit,
)
from skillstate.storage.postgres import (
    MIGRATIONS as PG_MIGRATIONS,
)
from skillstate.storage.postgres import (
    SCHEMA_VERSION as PG_VERSION,
)
from skillstate.storage.postgres import (
    PostgresDatabase,
    PostgresStateStore,
    table_names,
)
from skillstate.storage.sqlite import MIGRATIONS, SCHEMA_VERSION, schema_version


@asynccontextmanager
async def audit_log(kind: str, folder: Path, clock: Clock) -> AsyncIterator[AuditLog]:
    if kind == "memory":
        yield AuditLog(MemoryAudit(), clock=clock)
        return
    if kind == "postgres":
        async with postgres_database() as pg:
            yield AuditLog(PostgresAudit(pg), kind="postgresql", clock=clock)
        return
    db = await SQLiteDatabase.open(folder / "skillstate.db")
    try:
        yield AuditLog(SQLiteAudit(db), kind="sqlite", clock=clock)
    finally:
        await db.close()


@pytest.fixture(params=BACKENDS)
async def filled(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AuditLog]:
    """A log of five entries: at 100, 100, 200, 300 and 400 s, resets and collapses."""
    clock = Clock(100.0)
    async with audit_log(request.param, tmp_path, clock) as log:
        await log.record("loopback", "session.reset", "a", {"client": "127.0.0.1"})
        await log.record("token", "session.collapse", "b")
        for target in ("c", "d", "e"):
            clock.advance(100)
            await log.record("token", "session.reset", target, {"n": [1, {"x": None}]})
        yield log


def targets(entries: list[AuditEntry]) -> list[str]:
    return [entry.target for entry in entries]


async def test_entries_are_newest_first_whole(filled: AuditLog) -> None:
    entries = await filled.entries()
    assert targets(entries) == ["e", "d", "c", "b", "a"]  # one second: newest written first
    assert entries[-1] == AuditEntry(
        100.0, "loopback", "session.reset", "a", {"client": "127.0.0.1"}
    )
    assert entries[0].detail == {"n": [1, {"x": None}]} and entries[0].when == 400.0
    assert filled.degraded is None


async def test_filters_and_limit(filled: AuditLog) -> None:
    assert targets(await filled.entries(since=200)) == ["e", "d", "c"]
    assert targets(await filled.entries(until=300)) == ["c", "b", "a"]
    assert targets(await filled.entries(since=200, until=400)) == ["d", "c"]
    assert targets(await filled.entries(action="session.collapse")) == ["b"]
    assert targets(await filled.entries(action="session.reset", until=300)) == ["c", "a"]
    assert targets(await filled.entries(limit=2)) == ["e", "d"]
    assert await filled.entries(action="key.create") == []


async def test_sqlite_refuses_update_and_delete(tmp_path: Path) -> None:
    path = tmp_path / "skillstate.db"
    db = await SQLiteDatabase.open(path)
    await AuditLog(SQLiteAudit(db)).record("token", "session.reset", "a")
    await db.close()
    conn = sqlite3.connect(path)
    try:
        for sql in ("UPDATE audit SET who = 'nobody'", "DELETE FROM audit"):
            with pytest.raises(sqlite3.DatabaseError, match="append-only"):
                conn.execute(sql)
        assert conn.execute("SELECT who, target FROM audit").fetchall() == [("token", "a")]
    finally:
        conn.close()


async def test_postgres_refuses_update_and_delete() -> None:
    async with postgres_database() as db:
        await AuditLog(PostgresAudit(db)).record("token", "session.reset", "a")
        for sql in ("UPDATE skillstate_audit SET who = 'nobody'", "DELETE FROM skillstate_audit"):
            with pytest.raises(asyncpg.RaiseError, match="append-only"):
                await db.pool.execute(sql)
        rows = await db.pool.fetch("SELECT who, target FROM skillstate_audit")
        assert [tuple(row) for row in rows] == [("token", "a")]


async def test_a_version_1_sqlite_file_gets_the_audit_table_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "skillstate.db"
    conn = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("INSERT INTO sessions VALUES ('old', 3, 2, ?, ?, 1, 1.0, 1.0)", (b"{}", b"{}"))
    conn.commit()
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    db = await SQLiteDatabase.open(path)
    try:
        assert (await SQLiteStateStore(db).load("old")).version == 3
        log = AuditLog(SQLiteAudit(db), clock=Clock())
        await log.record("loopback", "session.reset", "old")
        assert targets(await log.entries()) == ["old"]
    finally:
        await db.close()
    assert schema_version(path) == SCHEMA_VERSION


async def test_a_version_2_postgres_database_gets_the_audit_table_and_keeps_its_data() -> None:
    async with postgres_database() as db:
        await db.pool.execute("DROP TABLE IF EXISTS " + ", ".join(table_names()))
        async with db.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "CREATE TABLE skillstate_schema ("
                " version INTEGER PRIMARY KEY, applied DOUBLE PRECISION NOT NULL)"
            )
            for version in (1, 2):
                for statement in PG_MIGRATIONS[version - 1]:
                    await conn.execute(statement)
                await conn.execute("INSERT INTO skillstate_schema VALUES ($1, 0)", version)
        await PostgresStateStore(db, clock=Clock()).commit(
            "kept", Change({"goal": "kept"}, step=1), expected_version=0
        )
        assert await db.pool.fetchval("SELECT to_regclass('skillstate_audit')") is None
    reopened = await PostgresDatabase.open(postgres_dsn())
    try:
        assert await reopened.schema_version() == PG_VERSION
        assert (await PostgresStateStore(reopened).load("kept")).version == 1
        log = AuditLog(PostgresAudit(reopened), clock=Clock())
        await log.record("token", "session.collapse", "kept")
        assert targets(await log.entries()) == ["kept"]
        with pytest.raises(asyncpg.RaiseError, match="append-only"):
            await reopened.pool.execute("DELETE FROM skillstate_audit")
    finally:
        await reopened.close()


async def test_a_refused_write_is_kept_in_memory_then_written_in_order(tmp_path: Path) -> None:
    """A trigger that refuses every INSERT stands in for a store that fails: the record does
    not raise, the entry is shown all the same, and once the store takes writes again the
    kept entry is written before the next one."""
    path = tmp_path / "skillstate.db"
    db = await SQLiteDatabase.open(path)
    clock = Clock()
    log = AuditLog(SQLiteAudit(db), kind="sqlite", clock=clock)
    refuse = "CREATE TRIGGER refuse BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'full'); END"
    try:
        await db.run(lambda conn: conn.execute(refuse))
        await log.record("token", "session.reset", "first")
        assert log.degraded is not None and "full" in log.degraded
        assert targets(await log.entries()) == ["first"]
        await db.run(lambda conn: conn.execute("DROP TRIGGER refuse"))
        clock.advance(1)
        await log.record("token", "session.reset", "second")
        assert log.degraded is None
        reopened = AuditLog(SQLiteAudit(db))
        assert targets(await reopened.entries()) == ["second", "first"]
    finally:
        await db.close()
