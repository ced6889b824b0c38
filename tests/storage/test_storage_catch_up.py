"""A store that fails and comes back: the wrappers serve from memory meanwhile, try the store
again off the request path, write back what memory took once it answers (Σ, documents, resets,
archived spans and index entries), and serve from it again. A session another gateway changed
meanwhile is left as the store has it and reported, never overwritten.

The failures are real: SQLite locked by another connection, an archive folder that cannot be
written, PostgreSQL cut off by a loopback proxy (``testing.tcp_proxy``) and restored."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from skillstate.storage import (
    ArchiveEntry,
    Change,
    ResilientArchiveStore,
    ResilientStateStore,
    SQLiteDatabase,
    SQLiteStateStore,
    StoreOptions,
    open_stores,
)
from skillstate.storage.postgres import PostgresArchiveStore, PostgresDatabase, PostgresStateStore
from skillstate.testing.tcp_proxy import TcpProxy

RETRY = 0.05
REF = "ar_" + "d" * 24


async def recovered(*stores: ResilientStateStore | ResilientArchiveStore) -> None:
    """Until every store serves from its backing store again (at most 10 s)."""
    for _ in range(200):
        if all(store.degraded is None for store in stores):
            return
        await asyncio.sleep(RETRY)
    raise AssertionError("the store never came back")


def said(caplog: pytest.LogCaptureFixture, words: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if words in r.getMessage()]


async def test_sqlite_unlocked_again_gets_what_memory_took(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    options = StoreOptions(busy_timeout=0.05, retry_seconds=RETRY)
    stores = await open_stores(tmp_path, options=options)
    state = stores.state
    await state.update("kept", lambda r: r.changed(state={"plan": "a"}, step=1))
    await state.update("dropped", lambda r: r.changed(state={"plan": "z"}, step=1))
    other = sqlite3.connect(tmp_path / "skillstate.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        await state.update("kept", lambda r: r.changed(state={**r.state, "b": 2}, step=2))
        await state.update("new", lambda r: r.changed(state={"fresh": True}, step=1))
        await state.put_doc("kept", "epoch", {"n": 1})
        await state.reset("dropped")
        assert state.degraded is not None
        await asyncio.sleep(RETRY * 4)  # tried while still locked: still in memory
        assert state.degraded is not None
    finally:
        other.execute("ROLLBACK")
        other.close()
    await recovered(state)
    await stores.close()

    db = await SQLiteDatabase.open(tmp_path / "skillstate.db")
    disk = SQLiteStateStore(db)
    kept = await disk.load("kept")
    assert (kept.state, kept.step, kept.version) == ({"plan": "a", "b": 2}, 2, 2)
    assert (await disk.load("new")).state == {"fresh": True}
    assert await disk.get_doc("kept", "epoch") == {"n": 1}
    assert (await disk.load("dropped")).state == {}
    assert sorted(info.session for info in await disk.list_sessions()) == ["kept", "new"]
    await db.close()
    assert len(said(caplog, "failed")) == 1  # once for the outage, not once per try
    assert len(said(caplog, "answers again")) == 1


async def test_an_archive_folder_writable_again_gets_the_spans_memory_kept(
    tmp_path: Path,
) -> None:
    options = StoreOptions(retry_seconds=RETRY)
    stores = await open_stores(tmp_path, options=options)
    blocker = tmp_path / "archive" / REF[-2:]
    blocker.parent.mkdir(exist_ok=True)
    blocker.write_text("a file where a blob folder should be")
    entry = ArchiveEntry("s", REF, 1, 4, "early turns", 9, 1.0)
    await stores.archive.put(REF, b"span kept in memory")
    await stores.archive.add_entry(entry)
    assert stores.archive.degraded is not None
    blocker.unlink()
    await recovered(stores.archive)
    assert stores.disk_archive is not None
    assert await stores.disk_archive.get(REF) == b"span kept in memory"
    assert await stores.disk_archive.entries("s") == [entry]
    await stores.close()


async def test_postgres_cut_off_and_restored_gets_every_change_back(postgres_url: str) -> None:
    port = urlsplit(postgres_url).port or 5432
    async with TcpProxy(port) as proxy:
        db = await PostgresDatabase.open(proxy.url(postgres_url))
        state = ResilientStateStore(PostgresStateStore(db), retry_every=RETRY)
        archive = ResilientArchiveStore(PostgresArchiveStore(db), retry_every=RETRY)
        await state.commit("cut", Change({"a": 1}, 1), expected_version=0)
        await proxy.cut()
        record = await state.update("cut", lambda r: r.changed(state={**r.state, "b": 2}))
        await state.commit("born", Change({"c": 3}, 1), expected_version=0)
        await archive.put(REF, b"archived while cut off")
        await archive.add_entry(ArchiveEntry("cut", REF, 0, 2, "turns", 22, 1.0))
        assert record.version == 2 and state.degraded and archive.degraded
        await proxy.restore()
        await recovered(state, archive)
        direct = await PostgresDatabase.open(postgres_url)
        store = PostgresStateStore(direct)
        assert (await store.load("cut")).state == {"a": 1, "b": 2}
        assert (await store.load("born")).state == {"c": 3}
        assert await PostgresArchiveStore(direct).get(REF) == b"archived while cut off"
        assert [e.ref for e in await PostgresArchiveStore(direct).entries("cut")] == [REF]
        after = await state.update("cut", lambda r: r.changed(state={**r.state, "d": 4}))
        assert after.version == 3 and (await store.load("cut")).version == 3  # served by it
        for closing in (state, archive, direct):
            await closing.close()
        await db.close()


async def test_a_session_another_gateway_changed_meanwhile_is_reported_not_overwritten(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    port = urlsplit(postgres_url).port or 5432
    async with TcpProxy(port) as proxy:
        cut_db = await PostgresDatabase.open(proxy.url(postgres_url))
        other_db = await PostgresDatabase.open(postgres_url)
        one = ResilientStateStore(PostgresStateStore(cut_db), retry_every=RETRY)
        other = PostgresStateStore(other_db)
        await one.commit("both", Change({"by": "one"}, 1), expected_version=0)
        await proxy.cut()
        await one.update("both", lambda r: r.changed(state={"by": "one, cut off"}))
        await one.update("alone", lambda r: r.changed(state={"by": "one, cut off"}))
        await other.update("both", lambda r: r.changed(state={"by": "the other"}))
        await proxy.restore()
        await recovered(one)
        assert (await other.load("both")).state == {"by": "the other"}
        assert (await other.load("alone")).state == {"by": "one, cut off"}
        assert one.failover.unwritten == ["both"]
        assert (await one.load("both")).state == {"by": "the other"}  # served by the store
        assert len(said(caplog, "both was not written back")) == 1
        await one.close()
        await other_db.close()
        await cut_db.close()
