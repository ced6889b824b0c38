"""What the storage tests share: a clock they move by hand, and the stores under test."""

from __future__ import annotations

import asyncio
import atexit
import os
import secrets
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import pytest

from skillstate.storage import (
    BlobStore,
    MemoryArchiveStore,
    MemoryStateStore,
    SQLiteArchiveStore,
    SQLiteDatabase,
    SQLiteStateStore,
)
from skillstate.storage.postgres import (
    PostgresArchiveStore,
    PostgresDatabase,
    PostgresStateStore,
    table_names,
)
from skillstate.storage.protocols import ArchiveStore, StateStore

BACKENDS = ["memory", "sqlite", "postgres"]


class Clock:
    """Seconds that only move when a test says so."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@asynccontextmanager
async def state_store(kind: str, folder: Path, clock: Clock) -> AsyncIterator[StateStore]:
    if kind == "memory":
        yield MemoryStateStore(clock=clock)
        return
    if kind == "postgres":
        async with postgres_database() as pg:
            yield PostgresStateStore(pg, clock=clock)
        return
    db = await SQLiteDatabase.open(folder / "skillstate.db")
    try:
        yield SQLiteStateStore(db, clock=clock)
    finally:
        await db.close()


@asynccontextmanager
async def archive_store(kind: str, folder: Path, clock: Clock) -> AsyncIterator[ArchiveStore]:
    if kind == "memory":
        yield MemoryArchiveStore()
        return
    if kind == "postgres":
        async with postgres_database() as pg:
            yield PostgresArchiveStore(pg, clock=clock)
        return
    db = await SQLiteDatabase.open(folder / "skillstate.db")
    try:
        yield SQLiteArchiveStore(db, BlobStore(folder / "archive", clock=clock))
    finally:
        await db.close()


# PostgreSQL ----------------------------------------------------------------------------------
# One database per test process, made on first use and dropped at exit; each store a test opens
# starts from empty tables. Where no server answers, the tests that need one are skipped, except
# in CI (CI=true), where they fail: .ci/run starts the server first.

ADMIN_DSN = os.environ.get(
    "SKILLSTATE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)
_made: list[str] = []


def postgres_dsn() -> str:
    """The DSN of this process's test database, made on first use."""
    if _made:
        return _made[0]
    name = f"skillstate_test_{os.getpid()}_{secrets.token_hex(3)}"
    try:
        _apart(f'CREATE DATABASE "{name}"')
    except (OSError, asyncpg.PostgresError) as error:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no PostgreSQL at {ADMIN_DSN}: {error}")
    _made.append(ADMIN_DSN.rsplit("/", 1)[0] + "/" + name)
    atexit.register(_apart, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return _made[0]


def _apart(sql: str) -> None:
    """``sql`` run as the administrator on a loop of its own (a test's loop may be running)."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(_admin(sql))
        except BaseException as error:
            failed.append(error)

    apart = threading.Thread(target=run)
    apart.start()
    apart.join()
    if failed:
        raise failed[0]


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(ADMIN_DSN, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@asynccontextmanager
async def postgres_database(*, empty: bool = True) -> AsyncIterator[PostgresDatabase]:
    """This process's test database, opened (and migrated), its tables emptied."""
    db = await PostgresDatabase.open(postgres_dsn(), min_size=1, max_size=4)
    try:
        if empty:
            await db.pool.execute(
                "TRUNCATE " + ", ".join(t for t in table_names() if t != "skillstate_schema")
            )
        yield db
    finally:
        await db.close()
