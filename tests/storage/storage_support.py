"""What the storage tests share: a clock they move by hand, and the stores under test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from skillstate.storage import (
    BlobStore,
    MemoryArchiveStore,
    MemoryStateStore,
    SQLiteArchiveStore,
    SQLiteDatabase,
    SQLiteStateStore,
)
from skillstate.storage.protocols import ArchiveStore, StateStore

BACKENDS = ["memory", "sqlite"]


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
    db = await SQLiteDatabase.open(folder / "skillstate.db")
    try:
        yield SQLiteArchiveStore(db, BlobStore(folder / "archive", clock=clock))
    finally:
        await db.close()
