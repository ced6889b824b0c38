"""The SQLite backend on a real file: WAL mode, owner-only files, state that survives a
restart and a SIGKILL, two writers on one file that never lose a patch, and the schema guard."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from skillstate.storage import Change, SQLiteDatabase, SQLiteStateStore, StateRecord
from skillstate.storage.sqlite import MIGRATIONS, PAGE_CACHE_KIB, SCHEMA_VERSION, schema_version

CHILD = """
import asyncio, sys
from pathlib import Path
from skillstate.storage import Change, SQLiteDatabase, SQLiteStateStore

async def main() -> None:
    store = SQLiteStateStore(await SQLiteDatabase.open(Path(sys.argv[1])))
    version = (await store.load("s")).version
    while True:
        record = await store.commit(
            "s", Change({"n": version + 1, "pad": "x" * 200}, version + 1),
            expected_version=version,
        )
        version = record.version
        print(version, flush=True)

asyncio.run(main())
"""


async def test_the_database_is_in_wal_mode_and_owner_only(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    db = await SQLiteDatabase.open(data_dir / "skillstate.db")
    await SQLiteStateStore(db).commit("s", Change({"a": 1}, 1), expected_version=0)
    mode = await db.run(lambda conn: conn.execute("PRAGMA journal_mode").fetchone()[0])
    wal = stat.S_IMODE((data_dir / "skillstate.db-wal").stat().st_mode)
    await db.close()
    assert mode == "wal"
    assert wal == 0o600
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((data_dir / "skillstate.db").stat().st_mode) == 0o600


async def test_the_page_cache_is_bounded_below_sqlite_s_default(tmp_path: Path) -> None:
    db = await SQLiteDatabase.open(tmp_path / "skillstate.db")
    size = await db.run(lambda conn: conn.execute("PRAGMA cache_size").fetchone()[0])
    await db.close()
    assert size == -PAGE_CACHE_KIB  # negative: KiB (the default is -2000)
    assert PAGE_CACHE_KIB < 2000


async def test_files_left_open_by_an_earlier_run_are_made_owner_only(tmp_path: Path) -> None:
    """A 0777 folder and a 0666 database (a lax umask, another tool, a copy) stay open to every
    user unless the gateway tightens them; SQLite would give new -wal and -shm files 0666 too."""
    data_dir = tmp_path / "data"
    db = await SQLiteDatabase.open(data_dir / "skillstate.db")
    await SQLiteStateStore(db).commit("s", Change({"a": 1}, 1), expected_version=0)
    await db.close()
    os.chmod(data_dir, 0o777)
    for name in ("skillstate.db", "skillstate.db-wal", "skillstate.db-shm"):
        (data_dir / name).touch()
        os.chmod(data_dir / name, 0o666)
    db = await SQLiteDatabase.open(data_dir / "skillstate.db")
    await SQLiteStateStore(db).commit("s", Change({"a": 2}, 2), expected_version=1)
    modes = {
        path.name: stat.S_IMODE(path.stat().st_mode)
        for path in data_dir.iterdir()
        if path.name.startswith("skillstate.db")
    }
    await db.close()
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert modes == {
        name: 0o600 for name in ("skillstate.db", "skillstate.db-wal", "skillstate.db-shm")
    }


async def test_new_wal_files_are_owner_only_under_a_lax_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        db = await SQLiteDatabase.open(tmp_path / "d" / "skillstate.db")
        await SQLiteStateStore(db).commit("s", Change({"a": 1}, 1), expected_version=0)
        await db.close()
    finally:
        os.umask(old)
    assert {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "d").iterdir()} == {0o600}
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o700


async def test_state_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "skillstate.db"
    db = await SQLiteDatabase.open(path)
    store = SQLiteStateStore(db)
    await store.commit("s", Change({"plan": ["a"]}, 1, {"epoch": 1}), expected_version=0)
    await store.put_doc("s", "epoch", {"prefix_tokens": 900})
    await db.close()
    db = await SQLiteDatabase.open(path)
    store = SQLiteStateStore(db)
    assert await store.load("s") == StateRecord({"plan": ["a"]}, 1, 1, {"epoch": 1})
    assert await store.get_doc("s", "epoch") == {"prefix_tokens": 900}
    await db.close()


def test_sigkill_right_after_a_commit_loses_no_committed_version(tmp_path: Path) -> None:
    path = tmp_path / "skillstate.db"
    reported: list[int] = []
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        try:
            while len(reported) < 60:
                line = child.stdout.readline()
                assert line, child.stderr.read()
                reported.append(int(line))
            os.kill(child.pid, signal.SIGKILL)  # right after commit number 60 returned
        finally:
            child.kill()
        reported += [int(line) for line in child.stdout.read().split()]
    assert child.returncode == -signal.SIGKILL
    conn = sqlite3.connect(path)
    version, step, state = conn.execute(
        "SELECT version, step, state FROM sessions WHERE session = 's'"
    ).fetchone()
    conn.close()
    assert reported == list(range(1, len(reported) + 1))
    assert version >= reported[-1]
    assert step == version
    assert state.startswith(f'{{"n":{version},'.encode())


async def test_two_writers_on_one_file_lose_no_patch(tmp_path: Path) -> None:
    """Two databases on one file are two connections on two threads, as two gateway
    processes would be: their commits conflict for real, and ``update`` retries."""
    path = tmp_path / "skillstate.db"
    one, two = await SQLiteDatabase.open(path), await SQLiteDatabase.open(path)
    stores = [SQLiteStateStore(one), SQLiteStateStore(two)]

    def add(key: str):  # type: ignore[no-untyped-def]
        return lambda record: record.changed(state={**record.state, key: 1})

    await asyncio.gather(
        *(stores[n % 2].update("s", add(f"k{n}")) for n in range(30)),
    )
    final = await stores[0].load("s")
    await one.close()
    await two.close()
    assert final.version == 30
    assert set(final.state) == {f"k{n}" for n in range(30)}


async def test_a_database_from_a_newer_gateway_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "skillstate.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(sqlite3.DatabaseError, match="newer"):
        await SQLiteDatabase.open(path)


async def test_a_database_from_before_the_versions_is_brought_up_with_its_rows(
    tmp_path: Path,
) -> None:
    """A file an older gateway made (the tables, ``user_version`` 0) is migrated at open and
    keeps what it held."""
    path = tmp_path / "skillstate.db"
    conn = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO sessions VALUES ('old', 3, 2, ?, ?, 1, 1.0, 1.0)", (b'{"a":1}', b"{}")
    )
    conn.commit()
    conn.execute("PRAGMA user_version = 0")
    conn.close()
    assert schema_version(path) == 0
    db = await SQLiteDatabase.open(path)
    record = await SQLiteStateStore(db).load("old")
    await db.close()
    assert (record.state, record.version, record.step) == ({"a": 1}, 3, 2)
    assert schema_version(path) == SCHEMA_VERSION
    assert schema_version(tmp_path / "none.db") is None


async def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "skillstate.db"
    path.write_bytes(b"this is not a database file, just some text " * 30)
    with pytest.raises(sqlite3.DatabaseError):
        await SQLiteDatabase.open(path)


async def test_closing_twice_is_harmless(tmp_path: Path) -> None:
    db = await SQLiteDatabase.open(tmp_path / "skillstate.db")
    await db.close()
    await db.close()
