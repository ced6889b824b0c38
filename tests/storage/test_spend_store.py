"""What keys spend (``storage.spend``), the same on memory, SQLite and PostgreSQL: holds never
take a period past its limit however many reserve at once; settling adds what was spent,
releasing nothing; periods and keys apart; an expired hold no longer counts; a key's limits
kept beside it, changed by ``limit``, and the columns and tables come with the schema's newest
version (from the one before, keys kept)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from storage_support import BACKENDS, postgres_database

from skillstate.storage import SQLiteDatabase
from skillstate.storage.keys import (
    KeyLimits,
    MemoryKeyStore,
    PostgresKeyStore,
    SqliteKeyStore,
    made,
)
from skillstate.storage.postgres import SCHEMA_VERSION as PG_VERSION
from skillstate.storage.spend import (
    HOLD_S,
    Hold,
    MemorySpendStore,
    PostgresSpendStore,
    SpendStore,
    SqliteSpendStore,
    Tally,
)
from skillstate.storage.sqlite import MIGRATIONS, SCHEMA_VERSION, schema_version

NOW = 1_750_000_000.0


@asynccontextmanager
async def spend_store(kind: str, folder: Path) -> AsyncIterator[SpendStore]:
    if kind == "memory":
        yield MemorySpendStore()
        return
    if kind == "postgres":
        async with postgres_database() as pg:
            yield PostgresSpendStore(pg)
        return
    db = await SQLiteDatabase.open(folder / "skillstate.db")
    try:
        yield SqliteSpendStore(db)
    finally:
        await db.close()


@pytest.mark.parametrize("kind", BACKENDS)
async def test_concurrent_holds_never_pass_the_limit(kind: str, tmp_path: Path) -> None:
    async with spend_store(kind, tmp_path) as store:
        asked = [store.reserve("k1", "2025-06", 0.3, 1.0, NOW) for _ in range(12)]
        granted = [h for h in await asyncio.gather(*asked) if isinstance(h, Hold)]
        assert len(granted) == 3
        assert await store.tally("k1", "2025-06", NOW) == Tally(0.0, pytest.approx(0.9))
        refused = await store.reserve("k1", "2025-06", 0.3, 1.0, NOW)
        assert refused == Tally(0.0, pytest.approx(0.9))
        await store.settle(granted[0], 0.25)
        await store.release(granted[1])
        assert await store.tally("k1", "2025-06", NOW) == pytest.approx(Tally(0.25, 0.3))
        again = await store.reserve("k1", "2025-06", 0.4, 1.0, NOW)
        assert isinstance(again, Hold)
        assert isinstance(await store.reserve("k1", "2025-06", 0.1, 1.0, NOW), Tally)
        # another period, another key: apart
        assert isinstance(await store.reserve("k1", "2025-07", 1.0, 1.0, NOW), Hold)
        assert isinstance(await store.reserve("k2", "2025-06", 1.0, 1.0, NOW), Hold)


@pytest.mark.parametrize("kind", BACKENDS)
async def test_an_expired_hold_no_longer_counts(kind: str, tmp_path: Path) -> None:
    async with spend_store(kind, tmp_path) as store:
        hold = await store.reserve("k1", "2025-06-01", 1.0, 1.0, NOW)
        assert isinstance(hold, Hold)
        assert isinstance(await store.reserve("k1", "2025-06-01", 0.5, 1.0, NOW + 60), Tally)
        later = NOW + HOLD_S + 1
        assert await store.tally("k1", "2025-06-01", later) == Tally(0.0, 0.0)
        await store.settle(hold, 0.5)  # what it cost still counts
        assert await store.tally("k1", "2025-06-01", later) == Tally(0.5, 0.0)


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_keys_limits_are_kept_and_changed(kind: str, tmp_path: Path) -> None:
    limits = KeyLimits(budget_usd=2.5, period="day", rpm=10, tpm=5000)
    _, key = made("alice", limits=limits)
    _, plain = made("bob")
    if kind == "memory":
        await check_limits(MemoryKeyStore(), key, plain)
    elif kind == "postgres":
        async with postgres_database() as pg:
            await check_limits(PostgresKeyStore(pg), key, plain)
    else:
        db = await SQLiteDatabase.open(tmp_path / "skillstate.db")
        try:
            await check_limits(SqliteKeyStore(db), key, plain)
        finally:
            await db.close()


async def check_limits(store: object, key: object, plain: object) -> None:
    from skillstate.storage.keys import KeyStore, VirtualKey

    assert isinstance(key, VirtualKey) and isinstance(plain, VirtualKey)
    keys: KeyStore = store  # type: ignore[assignment]
    await keys.add(key)
    await keys.add(plain)
    assert await keys.find(key.digest) == key
    assert (await keys.find(plain.digest)) == plain and not plain.limits.any
    changed = await keys.limit(plain.id, KeyLimits(budget_usd=1.0))
    assert changed is not None and changed.limits == KeyLimits(budget_usd=1.0, period="month")
    assert (await keys.find(plain.digest)) == changed
    assert await keys.limit("nothere", KeyLimits()) is None
    assert key.as_json()["budget_usd"] == 2.5 and key.as_json()["rpm"] == 10


def test_limits_are_checked() -> None:
    for wrong in ({"period": "week"}, {"budget_usd": -1.0}, {"rpm": 0}, {"tpm": 0}):
        with pytest.raises(ValueError):
            KeyLimits(**wrong)  # type: ignore[arg-type]


async def test_a_sqlite_file_of_the_version_before_gets_the_limits(tmp_path: Path) -> None:
    path = tmp_path / "skillstate.db"
    conn = sqlite3.connect(path)
    for version in MIGRATIONS[:-1]:
        for statement in version:
            conn.execute(statement)
    conn.execute(
        "INSERT INTO virtual_keys VALUES ('ab' || hex(randomblob(31)), 'old', 1.0, 0, NULL,"
        " NULL, '')"
    )
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
    conn.commit()
    conn.close()
    db = await SQLiteDatabase.open(path)
    try:
        (old,) = await SqliteKeyStore(db).all()
        assert old.tenant == "old" and old.limits == KeyLimits()
        assert isinstance(await SqliteSpendStore(db).reserve(old.id, "p", 1.0, 2.0, NOW), Hold)
    finally:
        await db.close()
    assert schema_version(path) == SCHEMA_VERSION


async def test_a_postgres_database_of_the_version_before_gets_the_limits() -> None:
    async with postgres_database() as db:
        _, old = made("old")
        await db.pool.execute("DROP TABLE skillstate_budget_spent, skillstate_budget_holds")
        for column in ("budget_usd", "period", "rpm", "tpm"):
            await db.pool.execute(f"ALTER TABLE skillstate_keys DROP COLUMN {column}")
        await db.pool.execute(
            "INSERT INTO skillstate_keys VALUES ($1, 'old', 1.0, FALSE, NULL, NULL, '')",
            old.digest,
        )
        await db.pool.execute("DELETE FROM skillstate_schema WHERE version = $1", PG_VERSION)
        migrated = await db.migrate()
        assert (migrated.before, migrated.after) == (PG_VERSION - 1, PG_VERSION)
        (found,) = await PostgresKeyStore(db).all()
        assert found.tenant == "old" and found.limits == KeyLimits()
        assert isinstance(await PostgresSpendStore(db).reserve(found.id, "p", 1.0, 2.0, NOW), Hold)
