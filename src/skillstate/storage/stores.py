"""Opening the gateway's stores: SQLite and blob files under the data directory, or one
PostgreSQL database several gateways share (``storage.postgres``), wrapped so that a disk or a
database that fails, now or later, degrades to memory instead of failing requests, and is
tried again until it answers (a PostgreSQL database that could not be reached at start too)."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skillstate.storage.blobs import DEFAULT_MAX_BYTES, DEFAULT_TTL, BlobStore
from skillstate.storage.failover import RETRY_SECONDS
from skillstate.storage.memory import MemoryArchiveStore, MemoryStateStore
from skillstate.storage.postgres import (
    PostgresArchiveStore,
    PostgresDatabase,
    PostgresStateStore,
)
from skillstate.storage.resilient import ResilientArchiveStore, ResilientStateStore
from skillstate.storage.sealing import Sealer
from skillstate.storage.sqlite import DB_NAME, SQLiteDatabase, SQLiteStateStore, Synchronous
from skillstate.storage.sqlite_archive import SQLiteArchiveStore
from skillstate.support.extras import MissingExtra
from skillstate.support.urls import shown_url

ARCHIVE_DIR = "archive"

log = logging.getLogger("skillstate.storage")


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """How the stores are bounded, how hard SQLite waits and syncs, how often a store that
    failed is tried again, and what seals records at rest (None: nothing is sealed)."""

    archive_max_bytes: int = DEFAULT_MAX_BYTES
    archive_ttl: float = DEFAULT_TTL
    busy_timeout: float = 5.0
    synchronous: Synchronous = "NORMAL"
    retry_seconds: float = RETRY_SECONDS
    sealer: Sealer | None = None

    @classmethod
    def of_archive(cls, ttl_days: float, max_mb: int, sealer: Sealer | None = None) -> StoreOptions:
        """The options for the settings ``archive_ttl_days`` and ``archive_max_mb``, and the
        data key's sealer."""
        return cls(
            archive_max_bytes=max_mb * 1024 * 1024,
            archive_ttl=ttl_days * 24 * 3600.0,
            sealer=sealer,
        )


@dataclass(slots=True)
class Stores:
    """The state and archive stores the gateway uses, and what must be closed with them."""

    state: ResilientStateStore
    archive: ResilientArchiveStore
    database: SQLiteDatabase | None = None
    #: The archive on disk itself, for what only it answers (``skillstate archive``).
    disk_archive: SQLiteArchiveStore | None = None
    #: The shared database, where the stores are in PostgreSQL.
    shared: PostgresDatabase | None = None

    @property
    def kind(self) -> str:
        """``postgresql``, ``sqlite`` or ``memory``: where Σ and the archive are kept."""
        if self.degraded:
            return "memory"
        return "postgresql" if self.shared else "sqlite" if self.database else "memory"

    @property
    def degraded(self) -> str | None:
        """Why a store runs in memory, or None while both are on disk."""
        return self.state.degraded or self.archive.degraded

    @property
    def unwritten_count(self) -> int:
        """How many things memory took while a store was down could not be written back to
        it: sessions another gateway changed meanwhile, spans evicted (the log names them)."""
        return self.state.failover.unwritten_count + self.archive.failover.unwritten_count

    async def close(self) -> None:
        await self.state.close()
        await self.archive.close()
        for database in (self.database, self.shared):
            if database is not None:
                with contextlib.suppress(Exception):
                    await database.close()


async def open_stores(
    data_dir: Path | None,
    *,
    options: StoreOptions | None = None,
    clock: Callable[[], float] = time.time,
    url: str = "",
) -> Stores:
    """The stores under ``data_dir`` (``<data_dir>/skillstate.db`` and ``<data_dir>/archive/``),
    in the PostgreSQL database of ``url`` where one is given, or in memory when ``data_dir``
    is None. A data directory or database that cannot be opened is logged once and the stores
    run in memory: the gateway starts all the same."""
    opts = options or StoreOptions()
    if url:
        return await _shared(url, data_dir, opts, clock)
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
        sealer=opts.sealer,
    )
    disk_archive = SQLiteArchiveStore(database, blobs)
    state = SQLiteStateStore(database, clock=clock, sealer=opts.sealer)
    return Stores(
        ResilientStateStore(state, clock=clock, retry_every=opts.retry_seconds),
        ResilientArchiveStore(disk_archive, retry_every=opts.retry_seconds),
        database,
        disk_archive,
    )


async def _shared(
    url: str, data_dir: Path | None, opts: StoreOptions, clock: Callable[[], float]
) -> Stores:
    """Σ and the archive in the database of ``url``; the SQLite database under ``data_dir``
    is opened too, for what stays on each machine (the ledger, the integrations record)."""
    local = None
    if data_dir is not None:
        with contextlib.suppress(Exception):  # the ledger then runs in memory, as it would
            local = await SQLiteDatabase.open(
                data_dir / DB_NAME, busy_timeout=opts.busy_timeout, synchronous=opts.synchronous
            )
    try:
        shared = await PostgresDatabase.open(url)
    except MissingExtra:
        if local is not None:
            await local.close()
        raise  # asked for and not installed: said at start, not degraded to
    except Exception as error:
        log.error(
            "the store %s cannot be used (%s): in memory, trying it again every %g s",
            shown_url(url),
            error,
            opts.retry_seconds,
        )
        shared = PostgresDatabase.unopened(url)
        state, archive = _postgres_stores(shared, opts, clock)
        return Stores(
            ResilientStateStore.unopened(
                state, error, shared.ensure, clock=clock, retry_every=opts.retry_seconds
            ),
            ResilientArchiveStore.unopened(
                archive, error, shared.ensure, retry_every=opts.retry_seconds
            ),
            local,
            shared=shared,
        )
    state, archive = _postgres_stores(shared, opts, clock)
    return Stores(
        ResilientStateStore(state, clock=clock, retry_every=opts.retry_seconds),
        ResilientArchiveStore(archive, retry_every=opts.retry_seconds),
        local,
        shared=shared,
    )


def _postgres_stores(
    shared: PostgresDatabase, opts: StoreOptions, clock: Callable[[], float]
) -> tuple[PostgresStateStore, PostgresArchiveStore]:
    state = PostgresStateStore(shared, clock=clock, sealer=opts.sealer)
    archive = PostgresArchiveStore(shared, ttl=opts.archive_ttl, clock=clock, sealer=opts.sealer)
    return state, archive
