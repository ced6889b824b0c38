"""What the storage tests share: a clock they move by hand, and the stores under test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from skillstate.storage import (
    BlobStore,
    MemoryArchiveStore,
    MemoryStateStore,
    SQLiteArchiveStore,
    SQLiteDatabase,
    SQLiteStateStore,
)
from skillstate.storage.postgres import PostgresArchiveStore, PostgresDatabase, PostgresStateStore
from skillstate.storage.protocols import ArchiveStore, StateStore
from skillstate.testing import postgres as testing_postgres

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


def postgres_dsn() -> str:
    """This process's test database (``testing.postgres``); the test is skipped where no server
    answers, but in CI, where it fails."""
    try:
        return testing_postgres.dsn()
    except testing_postgres.PostgresUnavailable as error:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(error))


@asynccontextmanager
async def postgres_database(*, empty: bool = True) -> AsyncIterator[PostgresDatabase]:
    postgres_dsn()
    async with testing_postgres.database(empty=empty) as db:
        yield db
