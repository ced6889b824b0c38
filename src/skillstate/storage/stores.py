"""Opening the gateway's stores: SQLite and blob files under the data directory, wrapped so
that a disk that fails, now or later, degrades to memory instead of failing requests."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skillstate.storage.blobs import DEFAULT_MAX_BYTES, DEFAULT_TTL, BlobStore
from skillstate.storage.memory import MemoryArchiveStore, MemoryStateStore
from skillstate.storage.resilient import ResilientArchiveStore, ResilientStateStore
from skillstate.storage.sqlite import DB_NAME, SQLiteDatabase, SQLiteStateStore, Synchronous
from skillstate.storage.sqlite_archive import SQLiteArchiveStore

ARCHIVE_DIR = "archive"


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """How the stores are bounded and how hard SQLite waits and syncs."""

    archive_max_bytes: int = DEFAULT_MAX_BYTES
    archive_ttl: float = DEFAULT_TTL
    busy_timeout: float = 5.0
    synchronous: Synchronous = "NORMAL"

    @classmethod
    def of_archive(cls, ttl_days: float, max_mb: int) -> StoreOptions:
        """The options for the settings ``archive_ttl_days`` and ``archive_max_mb``."""
        return cls(archive_max_bytes=max_mb * 1024 * 1024, archive_ttl=ttl_days * 24 * 3600.0)


@dataclass(slots=True)
class Stores:
    """The state and archive stores the gateway uses, and what must be closed with them."""

    state: ResilientStateStore
    archive: ResilientArchiveStore
    database: SQLiteDatabase | None = None
    #: The archive on disk itself, for what only it answers (``skillstate archive``).
    disk_archive: SQLiteArchiveStore | None = None

    @property
    def degraded(self) -> str | None:
        """Why a store runs in memory, or None while both are on disk."""
        return self.state.degraded or self.archive.degraded

    async def close(self) -> None:
        await self.state.close()
        await self.archive.close()
        if self.database is not None:
            with contextlib.suppress(Exception):
                await self.database.close()


async def open_stores(
    data_dir: Path | None,
    *,
    options: StoreOptions | None = None,
    clock: Callable[[], float] = time.time,
) -> Stores:
    """The stores under ``data_dir`` (``<data_dir>/skillstate.db`` and ``<data_dir>/archive/``),
    or in memory when ``data_dir`` is None. A data directory that cannot be opened is logged
    once and the stores run in memory: the gateway starts all the same."""
    opts = options or StoreOptions()
    if data_dir is None:
        return Stores(
            ResilientStateStore(MemoryStateStore(clock=clock), clock=clock),
            ResilientArchiveStore(MemoryArchiveStore()),
        )
    try:
        database = await SQLiteDatabase.open(
            data_dir / DB_NAME, busy_timeout=opts.busy_timeout, synchronous=opts.synchronous
        )
    except Exception as error:
        return Stores(
            ResilientStateStore.failed(error, clock=clock), ResilientArchiveStore.failed(error)
        )
    blobs = BlobStore(
        data_dir / ARCHIVE_DIR,
        max_bytes=opts.archive_max_bytes,
        ttl=opts.archive_ttl,
        clock=clock,
    )
    disk_archive = SQLiteArchiveStore(database, blobs)
    return Stores(
        ResilientStateStore(SQLiteStateStore(database, clock=clock), clock=clock),
        ResilientArchiveStore(disk_archive),
        database,
        disk_archive,
    )
