"""Virtual keys as stored (``storage.keys``), the same on memory, SQLite and PostgreSQL: only a
key's hash is kept, found by the key's text; every key listed, oldest first; revoking names the
id, keeps the key listed and refused; a key's shape, its tenant's rule, its models' patterns;
the table comes with the schema's newest version (from the one before, on both backends)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from storage_support import BACKENDS, postgres_database

from skillstate.storage import SQLiteDatabase
from skillstate.storage.keys import (
    KeyStore,
    MemoryKeyStore,
    PostgresKeyStore,
    SqliteKeyStore,
    VirtualKey,
    digest_of,
    looks_like_key,
    made,
)
from skillstate.storage.postgres import SCHEMA_VERSION as PG_VERSION
from skillstate.storage.sqlite import MIGRATIONS, SCHEMA_VERSION, schema_version


@asynccontextmanager
async def key_store(kind: str, folder: Path) -> AsyncIterator[KeyStore]:
    if kind == "memory":
        yield MemoryKeyStore()
        return
    if kind == "postgres":
        async with postgres_database() as pg:
            yield PostgresKeyStore(pg)
        return
    db = await SQLiteDatabase.open(folder / "skillstate.db")
    try:
        yield SqliteKeyStore(db)
    finally:
        await db.close()


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_key_is_kept_by_its_hash_listed_and_revoked(kind: str, tmp_path: Path) -> None:
    async with key_store(kind, tmp_path) as store:
        text, alice = made("alice", now=100.0, models=["gpt-4*", "claude-*"])
        _, admin = made("ops", admin=True, expires=500.0, now=200.0)
        await store.add(alice)
        await store.add(admin)
        assert looks_like_key(text) and alice.digest == digest_of(text)
        assert await store.find(digest_of(text)) == alice
        assert await store.find(digest_of(text + "x")) is None
        assert await store.all() == [alice, admin]
        revoked = await store.revoke(alice.id, 300.0)
        assert revoked is not None and revoked.revoked == 300.0
        again = await store.revoke(alice.id, 400.0)
        assert again is not None and again.revoked == 300.0  # revoked once, when it was
        assert await store.revoke("000000000000", 300.0) is None
        found = await store.find(alice.digest)
        assert found is not None and not found.usable(301.0)
        assert [key.id for key in await store.all()] == [alice.id, admin.id]


def test_a_keys_rules() -> None:
    text, key = made("alice-2", expires=50.0, models=["gpt-4*"], now=10.0)
    assert text.startswith("ssk-") and len(text) == 47 and text not in repr(key)
    assert key.usable(49.0) and not key.usable(50.0)
    assert key.allows("gpt-4.1") and not key.allows("claude-sonnet-4-5")
    assert VirtualKey("d" * 64, "t", 0.0).allows("anything")
    assert not looks_like_key("sk-" + "a" * 44) and not looks_like_key(text + "=")
    for bad in ("Alice", "", "a" * 33, "a/b", "-a"):
        with pytest.raises(ValueError, match="tenant"):
            made(bad)


async def test_a_sqlite_file_of_the_version_before_gets_the_table(tmp_path: Path) -> None:
    path = tmp_path / "skillstate.db"
    conn = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    db = await SQLiteDatabase.open(path)
    await SqliteKeyStore(db).add(made("alice")[1])
    await db.close()
    assert schema_version(path) == SCHEMA_VERSION


async def test_a_postgres_database_of_the_version_before_gets_the_table() -> None:
    async with postgres_database() as db:
        await db.pool.execute(
            "DROP TABLE skillstate_keys, skillstate_budget_spent, skillstate_budget_holds"
        )
        # the keys' version and the one after it (their limits: storage.spend's test)
        await db.pool.execute("DELETE FROM skillstate_schema WHERE version >= $1", PG_VERSION - 1)
        assert await db.schema_version() == PG_VERSION - 2
        migrated = await db.migrate()
        assert (migrated.before, migrated.after) == (PG_VERSION - 2, PG_VERSION)
        await PostgresKeyStore(db).add(made("alice")[1])
