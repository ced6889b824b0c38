"""The checks of what several gateways share: the PostgreSQL store (``store``: reachable,
its schema version against this gateway's, how long a query takes) and Redis (``redis``:
reachable, how long a ping takes). Neither set is fine: the store is then SQLite under the
data directory, and rate limits each process's own."""

from __future__ import annotations

import asyncio
import time

from skillstate.cli.doctor.check import Check
from skillstate.config import Settings
from skillstate.support.extras import MissingExtra
from skillstate.support.urls import shown_url

PROBE_TIMEOUT_S = 3.0
_EXTRA = "pip install 'skillstate[shared]'"


async def check_store(settings: Settings) -> Check:
    """The store Σ and the archive are kept in, and whether this gateway can use it."""
    if not settings.store:
        return Check("store", None, f"SQLite under {settings.data_dir} (no shared store set)")
    from skillstate.storage.postgres import SCHEMA_VERSION, PostgresDatabase

    shown = shown_url(settings.store)
    started = time.perf_counter()
    try:
        db = await asyncio.wait_for(
            PostgresDatabase.open_unmigrated(settings.store), PROBE_TIMEOUT_S
        )
        try:
            found = await asyncio.wait_for(db.schema_version(), PROBE_TIMEOUT_S)
        finally:
            await db.close()
    except MissingExtra as error:
        return Check("store", False, str(error), _EXTRA)
    except Exception as error:
        detail = f"{shown} cannot be reached: {_why(error)}"
        return Check("store", False, detail, "start PostgreSQL, or correct --store")
    ms = (time.perf_counter() - started) * 1000
    where = f"{shown}, schema version {found} ({ms:.1f} ms)"
    if found > SCHEMA_VERSION:
        detail = (
            f"{where}: newer than this gateway's {SCHEMA_VERSION}; it will not write to it"
            " (Σ in memory)"
        )
        return Check("store", False, detail, "upgrade skillstate")
    if found < SCHEMA_VERSION:
        detail = f"{where}: older than this gateway's {SCHEMA_VERSION}; migrated at start"
        return Check("store", None, detail, "skillstate db migrate")
    return Check("store", True, where)


async def check_redis(settings: Settings) -> Check:
    """The Redis rate limits are shared through, and whether it answers."""
    if not settings.redis:
        return Check("redis", None, "not set: each process keeps its own rate limits")

    shown = shown_url(settings.redis)
    from skillstate.gateway import shared_redis

    try:
        client = shared_redis(settings.redis)
    except MissingExtra as error:
        return Check("redis", False, str(error), _EXTRA)
    started = time.perf_counter()
    try:
        await asyncio.wait_for(client.ping(), PROBE_TIMEOUT_S)
    except Exception as error:
        return Check("redis", False, f"{shown} cannot be reached: {_why(error)}", "start Redis")
    finally:
        await client.aclose()
    return Check("redis", True, f"{shown} ({(time.perf_counter() - started) * 1000:.1f} ms)")


def _why(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return f"no answer in {PROBE_TIMEOUT_S:g} s"
    return f"{type(error).__name__}: {error}"
