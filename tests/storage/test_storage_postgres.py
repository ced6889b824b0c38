"""The PostgreSQL store beyond the contract suites (which run on it too): its schema versions
(applied from an empty database, once, by instances starting together; a database at an
earlier version brought up with what it held kept; a newer database refused), and two
instances, each with its own pool as two processes would have, sharing one session without
losing a patch, and each other's archive."""

from __future__ import annotations

import asyncio

import pytest
from storage_support import Clock, postgres_database, postgres_dsn

from skillstate.storage import ArchiveEntry, Change, StateRecord
from skillstate.storage.postgres import (
    MIGRATIONS,
    SCHEMA_VERSION,
    Migrated,
    PostgresArchiveStore,
    PostgresDatabase,
    PostgresStateStore,
    SchemaTooNew,
    table_names,
)


async def _drop_ours(db: PostgresDatabase) -> None:
    await db.pool.execute("DROP TABLE IF EXISTS " + ", ".join(table_names()))


async def test_an_empty_database_is_brought_to_the_schema_once() -> None:
    async with postgres_database() as db:
        await _drop_ours(db)
        assert await db.schema_version() == 0
        assert await db.migrate() == Migrated(0, SCHEMA_VERSION)
        assert await db.migrate() == Migrated(SCHEMA_VERSION, SCHEMA_VERSION)
        found = await db.pool.fetch(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE 'skillstate_%'"
        )
        assert {row[0] for row in found} == set(table_names())
        assert await db.pool.fetchval("SELECT count(*) FROM skillstate_schema") == SCHEMA_VERSION


async def test_instances_starting_together_apply_each_migration_once() -> None:
    async with postgres_database() as db:
        await _drop_ours(db)
    opened = await asyncio.gather(*(PostgresDatabase.open(postgres_dsn()) for _ in range(4)))
    try:
        assert {await each.schema_version() for each in opened} == {SCHEMA_VERSION}
        rows = await opened[0].pool.fetchval("SELECT count(*) FROM skillstate_schema")
        assert rows == SCHEMA_VERSION
    finally:
        await asyncio.gather(*(each.close() for each in opened))


async def test_a_database_at_the_version_before_gets_the_ledger_table_and_keeps_its_data() -> None:
    """Version 2 added the ledger: a database a version-1 gateway made (its tables, a
    session in them) is brought up by the next start, and the session is still there."""
    async with postgres_database() as db:
        await _drop_ours(db)
        async with db.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "CREATE TABLE skillstate_schema ("
                " version INTEGER PRIMARY KEY, applied DOUBLE PRECISION NOT NULL)"
            )
            for statement in MIGRATIONS[0]:
                await conn.execute(statement)
            await conn.execute("INSERT INTO skillstate_schema VALUES (1, 0)")
        await PostgresStateStore(db, clock=Clock()).commit(
            "kept", Change({"goal": "kept"}, step=1), expected_version=0
        )
        assert await db.pool.fetchval("SELECT to_regclass('skillstate_ledger')") is None
    reopened = await PostgresDatabase.open(postgres_dsn())
    try:
        assert await reopened.schema_version() == SCHEMA_VERSION  # the ledger and later ones
        assert await reopened.pool.fetchval("SELECT count(*) FROM skillstate_ledger") == 0
        indexes = await reopened.pool.fetch(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'skillstate_ledger'"
        )
        assert {"skillstate_ledger_ts", "skillstate_ledger_session"} <= {r[0] for r in indexes}
        record = await PostgresStateStore(reopened).load("kept")
        assert record.state == {"goal": "kept"} and record.version == 1
    finally:
        await reopened.close()


async def test_a_database_newer_than_the_code_is_refused() -> None:
    async with postgres_database() as db:
        await db.pool.execute("INSERT INTO skillstate_schema VALUES ($1, 0)", SCHEMA_VERSION + 1)
        try:
            with pytest.raises(SchemaTooNew, match="upgrade skillstate"):
                await PostgresDatabase.open(postgres_dsn())
        finally:
            await db.pool.execute(
                "DELETE FROM skillstate_schema WHERE version > $1", SCHEMA_VERSION
            )


async def test_two_instances_updating_one_session_lose_no_patch() -> None:
    async with postgres_database() as one, postgres_database(empty=False) as two:
        stores = [PostgresStateStore(one, clock=Clock()), PostgresStateStore(two, clock=Clock())]

        def add(key: str):  # type: ignore[no-untyped-def]
            def updater(record: StateRecord) -> Change:
                return record.changed(state={**record.state, key: True}, step=record.step + 1)

            return updater

        await asyncio.gather(*(stores[n % 2].update("shared", add(f"k{n}")) for n in range(40)))
        for store in stores:
            record = await store.load("shared")
            assert set(record.state) == {f"k{n}" for n in range(40)}
            assert record.version == record.step == 40


async def test_an_archive_written_by_one_instance_is_read_by_another() -> None:
    async with postgres_database() as one, postgres_database(empty=False) as two:
        writer, reader = PostgresArchiveStore(one), PostgresArchiveStore(two)
        await writer.put("ar_0123abcd", b"the exact turns " * 1_000)
        await writer.add_entry(ArchiveEntry("s", "ar_0123abcd", 0, 4, "turns 0-4", 16_000, 1.0))
        assert await reader.get("ar_0123abcd") == b"the exact turns " * 1_000
        assert [e.ref for e in await reader.entries("s")] == ["ar_0123abcd"]
        stored = await one.pool.fetchval(
            "SELECT octet_length(data) FROM skillstate_blobs WHERE ref = 'ar_0123abcd'"
        )
        assert stored < 16_000 / 10, "blobs are stored compressed"


async def test_a_blob_unused_past_its_lifetime_is_gone() -> None:
    clock = Clock()
    async with postgres_database() as db:
        archive = PostgresArchiveStore(db, ttl=60.0, clock=clock)
        await archive.put("ar_old", b"x")
        clock.advance(30)
        assert await archive.get("ar_old") == b"x"  # a read is a use
        clock.advance(59)
        assert await archive.get("ar_old") == b"x"
        clock.advance(61)
        assert await archive.get("ar_old") is None
