"""Invariant 5 on real failures: a data directory that cannot be opened, a database another
process keeps locked, an archive folder that cannot be written. The caller never sees an
error, a warning is logged once, and sessions carry on from their last Σ."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from storage_support import Clock

from skillstate.storage import (
    Change,
    StoreLimitError,
    StoreOptions,
    VersionConflict,
    open_stores,
)

REF = "ar_" + "a" * 24


def warnings_in(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


async def test_a_data_dir_that_cannot_be_opened_runs_in_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the data directory should be")
    stores = await open_stores(blocker / "data")
    record = await stores.state.update("s", lambda r: r.changed(state={"a": 1}, step=1))
    await stores.archive.put(REF, b"span")
    assert record.version == 1
    assert (await stores.state.load("s")).state == {"a": 1}
    assert await stores.archive.get(REF) == b"span"
    assert stores.degraded is not None and "NotADirectoryError" in stores.degraded
    assert len(warnings_in(caplog)) == 2  # one for each store, once
    await stores.close()


async def test_a_locked_database_degrades_mid_session_without_losing_the_state(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stores = await open_stores(tmp_path, options=StoreOptions(busy_timeout=0.05))
    state = stores.state
    await state.update("s", lambda r: r.changed(state={"plan": "a"}, step=1))
    await state.load("s")
    assert state.degraded is None
    other = sqlite3.connect(tmp_path / "skillstate.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        record = await state.update("s", lambda r: r.changed(state={**r.state, "b": 2}))
        again = await state.update("s", lambda r: r.changed(state={**r.state, "c": 3}))
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert record.version == 2
    assert again.state == {"plan": "a", "b": 2, "c": 3}
    assert again.version == 3
    assert state.degraded is not None and "locked" in state.degraded
    assert len(warnings_in(caplog)) == 1
    assert [info.session for info in await state.list_sessions()] == ["s"]
    await stores.close()


async def test_caller_errors_pass_through_and_do_not_degrade(tmp_path: Path) -> None:
    stores = await open_stores(tmp_path)
    await stores.state.commit("s", Change({}, 0), expected_version=0)
    with pytest.raises(VersionConflict):
        await stores.state.commit("s", Change({}, 0), expected_version=0)
    with pytest.raises(StoreLimitError):
        await stores.state.load("")
    with pytest.raises(StoreLimitError):
        await stores.archive.put("../x", b"")
    assert stores.degraded is None
    await stores.close()


async def test_an_archive_that_cannot_be_written_keeps_spans_in_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stores = await open_stores(tmp_path, clock=Clock())
    kept = "ar_" + "b" * 24
    await stores.archive.put(kept, b"written while the disk was fine")
    (tmp_path / "archive" / REF[-2:]).write_text("a file where a blob folder should be")
    await stores.archive.put(REF, b"new span")
    assert stores.archive.degraded is not None
    assert await stores.archive.get(REF) == b"new span"
    assert await stores.archive.get(kept) == b"written while the disk was fine"
    assert len(warnings_in(caplog)) == 1
    await stores.close()


async def test_the_index_keeps_entries_from_before_and_after_a_failure(tmp_path: Path) -> None:
    from skillstate.storage import ArchiveEntry

    stores = await open_stores(tmp_path, options=StoreOptions(busy_timeout=0.05))
    before = ArchiveEntry("s", REF, 1, 4, "early turns", 100, 1.0)
    after = ArchiveEntry("s", "ar_" + "c" * 24, 5, 9, "later turns", 200, 2.0)
    await stores.archive.add_entry(before)
    other = sqlite3.connect(tmp_path / "skillstate.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        await stores.archive.add_entry(after)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert stores.archive.degraded is not None
    assert await stores.archive.entries("s") == [before, after]
    assert await stores.archive.forget("s") == 2
    await stores.close()


async def test_without_a_data_dir_the_stores_are_in_memory_and_quiet(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stores = await open_stores(None)
    await stores.state.commit("s", Change({"a": 1}, 1), expected_version=0)
    assert stores.degraded is None
    assert warnings_in(caplog) == []
    await stores.close()


async def test_the_most_recently_used_sessions_carry_over(tmp_path: Path) -> None:
    from skillstate.storage import ResilientStateStore, SQLiteDatabase, SQLiteStateStore

    db = await SQLiteDatabase.open(tmp_path / "skillstate.db", busy_timeout=0.05)
    state = ResilientStateStore(SQLiteStateStore(db), remembered=2)
    for name in ("a", "b", "c"):
        await state.commit(name, Change({"name": name}, 1), expected_version=0)
    await state.load("a")  # a is used again: b is now the least recent
    other = sqlite3.connect(tmp_path / "skillstate.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        await state.put_doc("a", "epoch", {"n": 1})
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert state.degraded is not None
    assert (await state.load("a")).state == {"name": "a"}
    assert (await state.load("c")).state == {"name": "c"}
    assert (await state.load("b")).version == 0
    assert await state.get_doc("a", "epoch") == {"n": 1}  # the failed call, answered in memory
    await db.close()


async def test_what_carries_over_is_bounded_by_bytes_too(tmp_path: Path) -> None:
    from skillstate.storage import ResilientStateStore, SQLiteDatabase, SQLiteStateStore

    db = await SQLiteDatabase.open(tmp_path / "skillstate.db", busy_timeout=0.05)
    state = ResilientStateStore(SQLiteStateStore(db), remembered=100, remembered_bytes=200)
    for name in ("a", "b", "c"):
        await state.commit(name, Change({"text": name * 60}, 1), expected_version=0)
    other = sqlite3.connect(tmp_path / "skillstate.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        await state.put_doc("c", "epoch", {"n": 1})
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert state.degraded is not None
    assert (await state.load("c")).state == {"text": "c" * 60}
    assert (await state.load("b")).state == {"text": "b" * 60}
    assert (await state.load("a")).version == 0  # 3 x ~74 bytes of state: a did not fit
    await db.close()
