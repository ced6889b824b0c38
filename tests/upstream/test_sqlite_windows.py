"""The rate limits, circuits and boundary leases of one machine's processes, shared through
their SQLite file (``upstream.sqlite_windows``, ``storage.leases.SqliteLeases``): two
connections to one file stand for two processes. The rule is ``RateLimit``'s; a file that
fails leaves each process its own, said once."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from skillstate.storage import SQLiteDatabase
from skillstate.storage.leases import SqliteLeases
from skillstate.upstream.circuit import Circuit, CircuitPolicy, Outcome, State
from skillstate.upstream.limits import RateLimit
from skillstate.upstream.shared_circuits import CircuitSync
from skillstate.upstream.sqlite_windows import SqliteRateLimit, SqliteWindow, make_tables

POLICY = CircuitPolicy(failure_rate=0.5, min_calls=10, window_s=30.0, open_s=30.0, trials=3)


@pytest.fixture
async def two(tmp_path: Path) -> AsyncIterator[tuple[SQLiteDatabase, SQLiteDatabase]]:
    """Two connections to one file, each on its own thread, as two processes have."""
    one = await SQLiteDatabase.open(tmp_path / "skillstate.db")
    other = await SQLiteDatabase.open(tmp_path / "skillstate.db")
    await make_tables(one.run)
    yield one, other
    await one.close()
    await other.close()


def limited(db: SQLiteDatabase, rpm: int | None = None, tpm: int | None = None) -> SqliteRateLimit:
    local = RateLimit(lambda: 0.0, rpm=rpm, tpm=tpm, max_wait_s=10.0)
    return SqliteRateLimit(db.run, "up", local)


async def test_rpm_is_one_limit_across_the_processes(
    two: tuple[SQLiteDatabase, SQLiteDatabase],
) -> None:
    limits = [limited(db, rpm=3) for db in two]
    admitted = [(await limits[n % 2].admit(1)).wait_s for n in range(5)]
    assert admitted[:3] == [0.0, 0.0, 0.0]
    assert admitted[3:] == [None, None]  # each alone would have admitted its third


async def test_the_rule_is_the_local_one(two: tuple[SQLiteDatabase, SQLiteDatabase]) -> None:
    by_tokens = [limited(db, tpm=100) for db in two]
    assert (await by_tokens[0].admit(60)).wait_s == 0.0
    later = await by_tokens[1].admit(50)
    assert later.wait_s is None and 59 < later.retry_after_s <= 60
    alone = await by_tokens[1].admit(200)
    assert alone.wait_s is None and alone.retry_after_s == 0.0


async def test_a_file_that_fails_leaves_each_its_own(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    db = await SQLiteDatabase.open(tmp_path / "skillstate.db")  # no tables: every read fails
    limit = limited(db, rpm=1)
    assert [(await limit.admit(1)).wait_s for _ in range(3)] == [0.0, None, None]
    said = [r.getMessage() for r in caplog.records if "shared through SQLite" in r.getMessage()]
    assert len(said) == 1
    await db.close()


async def test_circuits_judge_both_processes_outcomes(
    two: tuple[SQLiteDatabase, SQLiteDatabase],
) -> None:
    circuits = [{"up": Circuit(lambda: 1000.0, POLICY)} for _ in two]
    syncs = [
        CircuitSync(SqliteWindow(db.run), c, POLICY) for db, c in zip(two, circuits, strict=True)
    ]
    for circuit in circuits:
        for _ in range(3):
            circuit["up"].tried(Outcome.FAILED)
            circuit["up"].record(Outcome.FAILED)
    for sync in (*syncs, *syncs):
        await sync.sync()
    assert circuits[0]["up"].counts() == circuits[1]["up"].counts() == (6, 6)
    for _ in range(4):
        circuits[1]["up"].record(Outcome.FAILED)
    assert circuits[1]["up"].state is State.OPEN
    await syncs[1].sync()
    await syncs[0].sync()
    assert circuits[0]["up"].state is State.OPEN and 29 < circuits[0]["up"].retry_in() <= 30


async def test_a_sessions_lease_has_one_holder_across_the_processes(
    two: tuple[SQLiteDatabase, SQLiteDatabase],
) -> None:
    one, other = [await SqliteLeases.open(db) for db in two]
    token = await one.take("s")
    assert token is not None and await other.take("s") is None
    await other.give_back("s", "not-its-token")
    assert await other.take("s") is None
    await one.give_back("s", token)
    assert await other.take("s") is not None


async def test_leases_on_a_file_that_fails_are_each_processs_own(tmp_path: Path) -> None:
    db = await SQLiteDatabase.open(tmp_path / "skillstate.db")
    leases = await SqliteLeases.open(db)
    await db.run(lambda conn: conn.execute("DROP TABLE leases"))
    token = await leases.take("s")
    assert token is not None and await leases.take("s") is None
    await leases.give_back("s", token)
    assert await leases.take("s") is not None
    await db.close()
