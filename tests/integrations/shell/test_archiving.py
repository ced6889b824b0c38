"""``integrations.shell.archiving.put``, the shell lane's write without the storage stack:
what it writes, the gateway's archive store reads back exactly, as ``Archive.put`` would have
written it; where the store would do more (create the database, evict, sweep), it writes
nothing and says so."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from pathlib import Path

from click.testing import CliRunner

from skillstate.archive import Archive, canonical_span, ref_for
from skillstate.cli.main import cli
from skillstate.integrations.shell import archiving
from skillstate.integrations.shell.run import SESSION, Outcome, exact, record, summary
from skillstate.storage import open_stores
from skillstate.storage.protocols import ArchiveEntry

DAY = 24 * 3600.0
QUOTA = 500 * 1024 * 1024
ARGV = ["grep", "-rn", "limit", "src"]
OUTCOME = Outcome(b"src/a.py:1: limit\n\xff\xfe not utf-8\n" * 200, b"grep: warning\n", 1)


def _span(outcome: Outcome = OUTCOME) -> tuple[str, bytes]:
    data = canonical_span(record(ARGV, outcome))
    return ref_for(data), data


def _initialised(data_dir: Path) -> Path:
    """A data directory whose database the gateway's store created."""

    async def open_and_close() -> None:
        stores = await open_stores(data_dir)
        await stores.close()

    asyncio.run(open_and_close())
    return data_dir


def _put(
    data_dir: Path, *, ttl: float = 7 * DAY, max_bytes: int = QUOTA, outcome: Outcome = OUTCOME
) -> bool:
    ref, data = _span(outcome)
    return archiving.put(data_dir, SESSION, ref, data, summary(ARGV), ttl=ttl, max_bytes=max_bytes)


async def _read(data_dir: Path, ref: str) -> tuple[list[ArchiveEntry], tuple[list[str], Outcome]]:
    stores = await open_stores(data_dir)
    try:
        archive = Archive(stores.archive)
        messages = await archive.span(ref)
        assert messages is not None
        return await archive.entries(SESSION), exact(messages)
    finally:
        await stores.close()


async def _store_put(data_dir: Path) -> None:
    ref, data = _span()
    stores = await open_stores(data_dir)
    try:
        await Archive(stores.archive).put(SESSION, ref, data, summary=summary(ARGV))
    finally:
        await stores.close()


def _blob(data_dir: Path, ref: str) -> Path:
    return data_dir / "archive" / ref[-2:] / f"{ref}.blob"


def test_the_store_reads_back_exactly_what_put_wrote(tmp_path: Path) -> None:
    data_dir = _initialised(tmp_path / "data")
    assert _put(data_dir)
    ref, data = _span()
    entries, (argv, outcome) = asyncio.run(_read(data_dir, ref))
    assert (argv, outcome) == (ARGV, OUTCOME)
    assert [(e.session, e.ref, e.first_turn, e.last_turn, e.summary, e.size) for e in entries] == [
        (SESSION, ref, -1, -1, summary(ARGV), len(data))
    ]
    assert abs(entries[0].created - time.time()) < 60
    assert os.stat(_blob(data_dir, ref)).st_mode & 0o777 == 0o600
    assert os.stat(_blob(data_dir, ref).parent).st_mode & 0o777 == 0o700


def test_it_writes_what_the_store_writes(tmp_path: Path) -> None:
    ours, theirs = _initialised(tmp_path / "ours"), _initialised(tmp_path / "theirs")
    assert _put(ours)
    asyncio.run(_store_put(theirs))
    ref, _ = _span()
    assert _blob(ours, ref).read_bytes() == _blob(theirs, ref).read_bytes()
    rows = []
    for data_dir in (ours, theirs):
        with contextlib.closing(sqlite3.connect(data_dir / "skillstate.db")) as conn:
            query = "SELECT session, ref, first_turn, last_turn, summary, size FROM archive_entries"
            rows.append(conn.execute(query).fetchall())
    assert rows[0] == rows[1] and len(rows[0]) == 1


def test_skillstate_archive_get_prints_it_byte_for_byte(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 (kept as lone surrogates) print as the bytes they were."""
    data_dir = _initialised(tmp_path / "data")
    assert _put(data_dir, outcome=OUTCOME)
    ref, _ = _span(OUTCOME)
    result = CliRunner().invoke(cli, ["archive", "get", ref, "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    assert b"src/a.py:1: limit\n\xff\xfe not utf-8\n" in result.stdout_bytes
    assert b"grep: warning" in result.stdout_bytes


def test_a_blob_already_there_is_only_marked_used(tmp_path: Path) -> None:
    data_dir = _initialised(tmp_path / "data")
    assert _put(data_dir)
    ref, _ = _span()
    blob = _blob(data_dir, ref)
    os.utime(blob, (time.time() - DAY, time.time() - DAY))
    before = blob.read_bytes()
    assert _put(data_dir)
    assert blob.read_bytes() == before and time.time() - blob.stat().st_mtime < 60
    entries, _ = asyncio.run(_read(data_dir, ref))
    assert len(entries) == 1


def test_it_leaves_to_the_store_what_only_the_store_does(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    assert not _put(fresh)
    assert not fresh.exists()  # the store creates the database, and the folder

    full = _initialised(tmp_path / "full")
    assert not _put(full, max_bytes=10)  # the store would evict, or refuse

    aged = _initialised(tmp_path / "aged")
    old = aged / "archive" / "zz" / "ar_000000000000000000000zz.blob"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"x")
    os.utime(old, (time.time() - 8 * DAY, time.time() - 8 * DAY))
    assert not _put(aged)  # the store would sweep the expired blob

    newer = _initialised(tmp_path / "newer")
    sqlite3.connect(newer / "skillstate.db", isolation_level=None).execute("PRAGMA user_version=2")
    assert not _put(newer)  # the store refuses a schema newer than its own
    for data_dir in (full, aged, newer):
        assert not _blob(data_dir, _span()[0]).exists()
