"""The ledger on SQLite and on PostgreSQL: the same rows give the same /cost document and the
same newest rows, value for value and type for type, under every filter, ties in one order
whatever the database's collation; the PostgreSQL table has a column for each ``Row`` field; a
batch is one transaction there (all its rows or none); a database that refuses a batch moves
the ledger to its fallback, said once; a connection the server dropped is made again; ``make``
runs off the event loop; a NUL refuses nothing; instances sweeping together remove each old
row once."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from skillstate.economics.ledger import Filters, Ledger, report
from skillstate.economics.ledger.postgres_ledger import PostgresLedger
from skillstate.economics.ledger.report import latest, parse_time
from skillstate.economics.ledger.row import COLUMNS, LOCAL, SUBSCRIPTION, Row
from skillstate.storage.postgres import PostgresDatabase
from skillstate.storage.sqlite import SQLiteDatabase
from skillstate.testing import postgres

T0 = parse_time("2026-12-01T10:00:00Z")
SESSIONS = ("s1", "s2", "Zeta", "alpha", "béta", "s-é")
MODELS = ("gpt-4o", "claude-sonnet-4-5", "Mystery", "local-model")
LANES = ("", "state=hybrid:step1", "state=hybrid:epoch2; compaction=host", "outputs=kept 3")
LOGINS = ("", "api-key", "gateway-key", SUBSCRIPTION)
BASES = ("", "recorded", "automatic", "explicit", "observed", "no-cache")
VERDICTS = ("", "hit", "first", "expired", "client-history")


def _rows(count: int = 400, seed: int = 7) -> list[Row]:
    """Rows as a busy day makes them, in time order: every kind of value the report sums,
    at times that fall in every part of an hour (PostgreSQL's CAST rounds: a row at :45
    would land in the next hour)."""
    rng = random.Random(seed)
    rows = []
    ts = T0
    for n in range(count):
        ts += rng.uniform(0, 400)
        model = rng.choice(MODELS)
        priced = model != "Mystery"
        login = rng.choice(LOGINS)
        first = rng.random() < 0.7
        cost = rng.uniform(0, 0.05) if priced and login != SUBSCRIPTION else None
        rows.append(
            Row(
                ts=ts,
                request_id=f"r{n // 2 if not first else n}",
                round=0 if first else rng.randint(1, 3),
                session=rng.choice(SESSIONS),
                client_wire=rng.choice(("openai-chat", "anthropic-messages")),
                upstream=LOCAL if rng.random() < 0.05 else "default",
                model=model,
                mode=rng.choice(("off", "hybrid", "paper")),
                lanes=rng.choice(LANES),
                status=rng.choice((200, 200, 200, 429, 500)),
                streamed=rng.random() < 0.5,
                input=rng.randint(0, 200_000),
                cached_input=rng.randint(0, 100_000),
                cache_write=rng.randint(0, 5_000),
                cache_write_1h=rng.randint(0, 100),
                output=rng.randint(0, 4_000),
                reasoning=rng.randint(0, 1_000),
                cost_usd=cost,
                passthrough_input=rng.randint(0, 300_000) if first else None,
                passthrough_cached_input=rng.randint(0, 100_000) if first else None,
                passthrough_cache_write=rng.randint(0, 5_000) if first else None,
                passthrough_cost_usd=rng.uniform(0, 0.08) if first and cost is not None else None,
                overhead_ms=rng.uniform(0, 5) if rng.random() < 0.8 else None,
                upstream_ms=rng.uniform(50, 900),
                cause="" if first else rng.choice(("state", "handover", "retry")),
                attempts=rng.choice(("", "200", "503,200")) if first else "",
                estimated=rng.random() < 0.1,
                estimate_basis=rng.choice(BASES) if first else "",
                login=login,
                cache_verdict=rng.choice(VERDICTS),
            )
        )
    return rows


ROWS = _rows()
FILTERS = [
    Filters(),
    Filters(session="s2"),
    Filters(session="béta"),
    Filters(model="Mystery"),
    Filters(model="gpt-4o", session="alpha"),
    Filters(since=ROWS[100].ts),
    Filters(until=ROWS[250].ts),
    Filters(since=ROWS[50].ts, until=ROWS[60].ts, model="claude-sonnet-4-5"),
    Filters(session="nobody"),
]


def _typed(value: Any) -> Any:
    """``value`` with each leaf's type beside it (1 == 1.0 and True == 1 in Python: not here)."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


@pytest.fixture
async def engines(postgres_url: str, tmp_path: Path) -> AsyncIterator[tuple[Ledger, Any]]:
    """A SQLite ledger on disk and a PostgreSQL one, each holding ``ROWS``."""
    db = await SQLiteDatabase.open(tmp_path / "skillstate.db")
    async with postgres.database() as pg:
        lite, shared = await Ledger.open(db), await PostgresLedger.open(pg, None)
        for ledger in (lite, shared):
            for start in range(0, len(ROWS), 128):  # in the recorder's batches
                await ledger.append(ROWS[start : start + 128])
        yield lite, shared
        assert shared.degraded is None
        await shared.close()
    await lite.close()
    await db.close()


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: repr(f)[8:-1] or "all")
async def test_the_same_rows_give_the_same_cost_document_on_both(
    engines: tuple[Ledger, PostgresLedger], filters: Filters
) -> None:
    lite, shared = engines
    expected = await report(lite, filters)
    assert expected["totals"]["requests"] or filters.session == "nobody"
    assert _typed(await report(shared, filters)) == _typed(expected)
    assert _typed(await latest(shared, 500, filters)) == _typed(await latest(lite, 500, filters))
    assert _typed(await latest(shared, 7, filters)) == _typed(await latest(lite, 7, filters))


async def test_every_lane_session_and_hour_is_in_the_document(
    engines: tuple[Ledger, PostgresLedger],
) -> None:
    """The rows reach every group the contract above compares (so that it compares them)."""
    doc = await report(engines[1])
    assert {group["lane"] for group in doc["by_lane"]} == {"state", "compaction", "outputs"}
    assert {group["session"] for group in doc["by_session"]} == set(SESSIONS)
    assert len(doc["hourly"]) >= 20
    assert set(doc["totals"]["logins"]) == {"", "api-key", "gateway-key", SUBSCRIPTION} - {""}


async def test_ties_come_out_in_one_order_whatever_the_databases_collation(
    postgres_url: str, tmp_path: Path
) -> None:
    """Groups of equal counts follow their names byte by byte, as in SQLite, even where the
    database sorts text by a language's rules (uppercase "Zeta" after "alpha")."""
    rows = [_row(n, model=model) for n, model in enumerate(("alpha", "Zeta", "beta", "Beta"))]
    db = await SQLiteDatabase.open(tmp_path / "skillstate.db")
    lite = await Ledger.open(db)
    await lite.append(rows)
    async with postgres.database() as pg:
        await pg.pool.execute(
            'ALTER TABLE skillstate_ledger ALTER COLUMN model TYPE TEXT COLLATE "en-US-x-icu"'
        )
        try:
            shared = await PostgresLedger.open(pg, None)
            await shared.append(rows)
            ordered = [group["model"] for group in (await report(shared))["by_model"]]
            await shared.close()
        finally:
            await pg.pool.execute(
                'ALTER TABLE skillstate_ledger ALTER COLUMN model TYPE TEXT COLLATE "default"'
            )
    assert ordered == [group["model"] for group in (await report(lite))["by_model"]]
    assert ordered == ["Beta", "Zeta", "alpha", "beta"]
    await lite.close()
    await db.close()


def _row(n: int, **changes: Any) -> Row:
    base: dict[str, Any] = {
        "ts": T0 + n,
        "request_id": f"r{n}",
        "round": 0,
        "session": "s1",
        "client_wire": "openai-chat",
        "upstream": "default",
        "model": "gpt-4o",
        "mode": "off",
        "lanes": "",
        "status": 200,
        "streamed": False,
        "input": 100,
        "output": 10,
        "cost_usd": 0.001,
    }
    return Row(**{**base, **changes})


async def test_the_table_has_a_column_for_every_row_field(postgres_url: str) -> None:
    async with postgres.database() as pg:
        found = await pg.pool.fetch(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_name = 'skillstate_ledger' ORDER BY ordinal_position"
        )
    assert [row[0] for row in found] == ["id", *COLUMNS]


async def test_a_batch_is_written_in_one_transaction(postgres_url: str) -> None:
    """Every row of one append carries the same transaction id (``xmin``): one commit for
    the batch, not one per row."""
    async with postgres.database() as pg:
        ledger = await PostgresLedger.open(pg, None)
        await ledger.append([_row(n) for n in range(300)])
        await ledger.append([_row(n) for n in range(300, 310)])
        counted = await pg.pool.fetchrow(
            "SELECT count(*), count(DISTINCT xmin::text) FROM skillstate_ledger"
        )
        await ledger.close()
    assert tuple(counted) == (310, 2)


async def test_a_refused_batch_writes_nothing_and_goes_to_the_fallback(
    postgres_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One row PostgreSQL cannot take (text where it keeps a number; SQLite keeps anything)
    refuses its whole batch there: none of its rows is in PostgreSQL, all are in the local
    SQLite ledger, which /cost reads from then on; the failure is said once."""
    batch = [_row(n) for n in range(3)] + [_row(3, input="many")] + [_row(n) for n in range(4, 7)]
    db = await SQLiteDatabase.open(tmp_path / "skillstate.db")
    async with postgres.database() as pg:
        ledger = await PostgresLedger.open(pg, db)
        await ledger.append(batch)
        await ledger.append([_row(7)])
        assert await pg.pool.fetchval("SELECT count(*) FROM skillstate_ledger") == 0
        doc = await report(ledger)
        await ledger.close()
    assert doc["totals"]["client_requests"] == 8
    assert "PostgreSQL database failed" in doc["degraded"] and "SQLite" in doc["degraded"]
    said = [r for r in caplog.records if r.getMessage().startswith("ledger: ")]
    assert len(said) == 1
    await db.close()


async def test_rows_are_made_off_the_event_loop(postgres_url: str) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def make() -> list[Row]:
        threads.append(threading.get_ident())
        return [_row(1), _row(2)]

    async with postgres.database() as pg:
        ledger = await PostgresLedger.open(pg, None)
        assert len(await ledger.append_made(make)) == 2
        assert await pg.pool.fetchval("SELECT count(*) FROM skillstate_ledger") == 2
        await ledger.close()
    assert threads and threads[0] != loop_thread


async def test_a_nul_in_a_name_does_not_refuse_the_batch(postgres_url: str) -> None:
    async with postgres.database() as pg:
        ledger = await PostgresLedger.open(pg, None)
        await ledger.append([_row(1, model="gpt\x00x"), _row(2)])
        (newest, oldest) = await latest(ledger, 10)
        assert ledger.degraded is None
        await ledger.close()
    assert oldest["model"] == "gpt\ufffdx" and newest["model"] == "gpt-4o"


async def test_instances_sweeping_together_remove_each_old_row_once(postgres_url: str) -> None:
    async with postgres.database() as pg:
        other = await PostgresDatabase.open(postgres_url)
        try:
            one, two = await PostgresLedger.open(pg, None), await PostgresLedger.open(other, None)
            await one.append([_row(n) for n in range(50)] + [_row(n + 1000) for n in range(5)])
            gone = await asyncio.gather(*(ledger.sweep(T0 + 500) for ledger in (one, two) * 3))
            assert sum(gone) == 50 and one.degraded is None and two.degraded is None
            assert (await report(two))["totals"]["requests"] == 5
            await one.close()
            await two.close()
        finally:
            await other.close()


async def test_a_writing_connection_the_server_dropped_is_made_again(postgres_url: str) -> None:
    """Between two batches the server ends the ledger's connection (a restart, an
    administrator): the next batch opens another and is written, nothing degraded."""
    async with postgres.database() as pg:
        ledger = await PostgresLedger.open(pg, None)
        await ledger.append([_row(1)])
        await pg.pool.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        await asyncio.sleep(0.2)  # the end reaches the client
        await ledger.append([_row(2)])
        assert ledger.degraded is None
        assert await pg.pool.fetchval("SELECT count(*) FROM skillstate_ledger") == 2
        await ledger.close()
