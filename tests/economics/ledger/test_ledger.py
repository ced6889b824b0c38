"""The ledger's table and GET /cost's sums: totals and groups, filters, unpriced costs as
null (never $0), losses as negative savings, retention, and the same on disk, in memory and
in PostgreSQL (``test_ledger_engines`` holds the engines to one document)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

from skillstate.economics.catalog_age import catalog_age
from skillstate.economics.ledger import Filters, Ledger, LedgerStore, Recorder, report
from skillstate.economics.ledger.postgres_ledger import PostgresLedger
from skillstate.economics.ledger.report import latest, parse_time
from skillstate.economics.ledger.row import Row
from skillstate.storage.sqlite import SQLiteDatabase
from skillstate.testing import postgres

HOUR = 3_600.0
T0 = parse_time("2026-12-01T10:00:00Z")


def _row(n: int, **changes: Any) -> Row:
    base: dict[str, Any] = {
        "ts": T0 + n * 60,
        "request_id": f"r{n}",
        "round": 0,
        "session": "s1",
        "client_wire": "openai-chat",
        "upstream": "default",
        "model": "gpt-4o",
        "mode": "hybrid",
        "lanes": "state=hybrid:step1",
        "status": 200,
        "streamed": False,
        "input": 1000,
        "cached_input": 200,
        "cache_write": 0,
        "output": 50,
        "reasoning": 10,
        "cost_usd": 0.01,
        "passthrough_input": 1500,
        "passthrough_cached_input": 0,
        "passthrough_cache_write": 0,
        "passthrough_cost_usd": 0.015,
        "overhead_ms": 1.0,
        "upstream_ms": 100.0,
    }
    base.update(changes)
    return Row(**base)


@pytest.fixture(params=["disk", "memory", "postgres"])
async def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "postgres":
        request.getfixturevalue("postgres_url")  # skipped where no server answers
        async with postgres.database() as pg:
            opened: LedgerStore = await PostgresLedger.open(pg, None)
            yield opened
            assert opened.degraded is None
            await opened.close()
    elif request.param == "disk":
        db = await SQLiteDatabase.open(tmp_path / "skillstate.db")
        opened = await Ledger.open(db)
        yield opened
        await opened.close()
        await db.close()
    else:
        opened = await Ledger.memory()
        yield opened
        await opened.close()


async def test_totals_are_the_sums_of_the_rows(ledger: LedgerStore) -> None:
    await ledger.append(
        [
            _row(1),
            _row(2),
            _row(2, round=1, passthrough_input=None, passthrough_cost_usd=None, cost_usd=0.002),
        ]
    )
    doc = await report(ledger)
    totals = doc["totals"]
    assert doc["label"] == "recorded cost, not a provider invoice"
    assert doc["currency"] == "USD"
    assert totals["requests"] == 3 and totals["client_requests"] == 2
    assert totals["input_tokens"] == 3000 and totals["cached_input_tokens"] == 600
    assert totals["output_tokens"] == 150 and totals["reasoning_tokens"] == 30
    assert totals["cost_usd"] == pytest.approx(0.022)
    assert totals["passthrough_cost_usd"] == pytest.approx(0.03)
    assert totals["saved_usd"] == pytest.approx(0.008)
    assert totals["unpriced_requests"] == 0
    assert totals["cache_hit_share"] == pytest.approx(0.2)
    assert doc["since"] == "2026-12-01T10:01:00Z" and doc["until"] == "2026-12-01T10:02:00Z"


async def test_an_unpriced_request_is_counted_beside_the_priced_sums(ledger: LedgerStore) -> None:
    """Issue 26: one request of a model without a price no longer hides every total; the
    totals are the priced rows' sums, the unpriced rows counted beside them."""
    await ledger.append(
        [
            _row(1),
            _row(2, model="mystery", cost_usd=None, passthrough_cost_usd=None),
            _row(3, model="mystery", cost_usd=None, passthrough_cost_usd=None),
        ]
    )
    doc = await report(ledger)
    totals = doc["totals"]
    assert totals["cost_usd"] == pytest.approx(0.01)
    assert totals["passthrough_cost_usd"] == pytest.approx(0.015)
    assert totals["saved_usd"] == pytest.approx(0.005)
    assert totals["state_overhead_cost_usd"] == 0 and totals["estimated_cost_usd"] == 0
    assert totals["unpriced_requests"] == 2 and totals["requests"] == 3
    models = {group["model"]: group for group in doc["by_model"]}
    assert models["gpt-4o"]["cost_usd"] == pytest.approx(0.01)
    assert models["mystery"]["unpriced_requests"] == 2
    # A group without one priced row has no cost: unknown, never $0.
    assert models["mystery"]["cost_usd"] is None
    assert models["mystery"]["passthrough_cost_usd"] is None
    assert models["mystery"]["saved_usd"] is None
    for group in (*doc["by_session"], *doc["hourly"], *doc["by_lane"]):
        assert group["cost_usd"] == pytest.approx(0.01) and group["unpriced_requests"] == 2


async def test_saved_is_taken_over_the_requests_priced_both_ways(ledger: LedgerStore) -> None:
    """A request whose estimate has no price (or whose cost has none) takes no part in the
    saving: its recorded cost is not set against a missing estimate."""
    await ledger.append(
        [
            _row(1),
            _row(2, passthrough_cost_usd=None),
            _row(3, cost_usd=None),
            _row(3, round=1, passthrough_input=None, passthrough_cost_usd=None, cost_usd=None),
        ]
    )
    totals = (await report(ledger))["totals"]
    assert totals["cost_usd"] == pytest.approx(0.02)
    assert totals["passthrough_cost_usd"] == pytest.approx(0.03)
    assert totals["saved_usd"] == pytest.approx(0.005)


async def test_the_rounds_of_a_request_count_against_its_saving(ledger: LedgerStore) -> None:
    await ledger.append(
        [
            _row(1),
            _row(1, round=1, passthrough_input=None, passthrough_cost_usd=None, cost_usd=0.002),
        ]
    )
    assert (await report(ledger))["totals"]["saved_usd"] == pytest.approx(0.003)


async def test_costs_are_null_only_where_no_row_is_priced(ledger: LedgerStore) -> None:
    await ledger.append([_row(1, model="mystery", cost_usd=None, passthrough_cost_usd=None)])
    totals = (await report(ledger))["totals"]
    assert totals["unpriced_requests"] == 1
    for name in ("cost_usd", "passthrough_cost_usd", "saved_usd", "estimated_cost_usd"):
        assert totals[name] is None, name


async def test_an_empty_ledger_costs_zero(ledger: LedgerStore) -> None:
    totals = (await report(ledger))["totals"]
    assert (totals["cost_usd"], totals["passthrough_cost_usd"], totals["saved_usd"]) == (0, 0, 0)
    assert totals["unpriced_requests"] == 0


async def test_client_requests_are_counted_by_the_basis_of_their_estimate(
    ledger: LedgerStore,
) -> None:
    await ledger.append(
        [
            _row(1, estimate_basis="recorded"),
            _row(2, estimate_basis="no-cache"),
            _row(3, estimate_basis="no-cache"),
            _row(3, round=1, passthrough_input=None, passthrough_cost_usd=None),
        ]
    )
    doc = await report(ledger)
    assert doc["totals"]["estimate_basis"] == {
        "recorded": 1,
        "automatic": 0,
        "explicit": 0,
        "observed": 0,
        "no-cache": 2,
    }
    rows = {(row["request_id"], row["round"]): row for row in await latest(ledger, 10)}
    assert (
        rows[("r2", 0)]["estimate_basis"] == "no-cache" and rows[("r3", 1)]["estimate_basis"] == ""
    )


async def test_the_catalog_age_is_carried_when_given(ledger: LedgerStore) -> None:
    age = catalog_age(date(2025, 11, 24), date(2026, 12, 3))
    doc = await report(ledger, catalog=age)
    assert doc["catalog"] == {"date": "2025-11-24", "age_days": 374, "stale": True}
    assert "catalog" not in await report(ledger)


async def test_a_loss_is_a_negative_saving(ledger: LedgerStore) -> None:
    await ledger.append([_row(1, cost_usd=0.02, passthrough_cost_usd=0.015)])
    assert (await report(ledger))["totals"]["saved_usd"] == pytest.approx(-0.005)


async def test_groups_by_model_session_lane_and_hour(ledger: LedgerStore) -> None:
    await ledger.append(
        [
            _row(1),
            _row(2, session="s2", lanes="state=hybrid:step1; compaction=host"),
            _row(90, session="s2", model="claude-sonnet-4-5", lanes=""),
        ]
    )
    doc = await report(ledger)
    assert {g["model"]: g["requests"] for g in doc["by_model"]} == {
        "gpt-4o": 2,
        "claude-sonnet-4-5": 1,
    }
    assert {g["session"]: g["requests"] for g in doc["by_session"]} == {"s1": 1, "s2": 2}
    assert {g["lane"]: g["requests"] for g in doc["by_lane"]} == {"state": 2, "compaction": 1}
    assert [(h["hour"], h["requests"]) for h in doc["hourly"]] == [
        ("2026-12-01T10:00:00Z", 2),
        ("2026-12-01T11:00:00Z", 1),
    ]


async def test_filters_keep_the_rows_they_name(ledger: LedgerStore) -> None:
    await ledger.append([_row(1), _row(2, session="s2"), _row(120, model="o3")])
    assert (await report(ledger, Filters(session="s2")))["totals"]["requests"] == 1
    assert (await report(ledger, Filters(model="o3")))["totals"]["requests"] == 1
    later = Filters(since=T0 + HOUR)
    assert (await report(ledger, later))["totals"]["requests"] == 1
    earlier = Filters(until=T0 + HOUR)
    assert (await report(ledger, earlier))["totals"]["requests"] == 2
    empty = await report(ledger, Filters(session="nobody"))
    assert empty["totals"]["requests"] == 0 and empty["totals"]["cost_usd"] == 0


async def test_retention_removes_old_rows(ledger: LedgerStore) -> None:
    await ledger.append([_row(1), _row(600)])
    assert await ledger.sweep(T0 + 300 * 60) == 1
    assert (await report(ledger))["totals"]["requests"] == 1


def test_times_are_iso_8601_and_a_bad_one_is_named() -> None:
    assert parse_time("2026-12-01") == parse_time("2026-12-01T00:00:00+00:00")
    assert parse_time("2026-12-01T10:00:00Z") == T0
    with pytest.raises(ValueError, match="'yesterday' is not an ISO 8601"):
        parse_time("yesterday")


async def test_a_database_that_refuses_writes_keeps_the_ledger_in_memory(tmp_path: Path) -> None:
    db = await SQLiteDatabase.open(tmp_path / "skillstate.db")
    ledger = await Ledger.open(db)
    await ledger.append([_row(1)])
    await db.run(lambda conn: conn.execute("DROP TABLE ledger"))
    await ledger.append([_row(2)])
    doc = await report(ledger)
    assert doc["totals"]["requests"] == 1  # the new row, in memory
    assert "writing the ledger failed" in doc["degraded"]
    await ledger.close()
    await db.close()


async def test_the_recorder_sweeps_rows_past_the_retention_at_start(tmp_path: Path) -> None:
    from skillstate.economics.ledger import Recorder

    db = await SQLiteDatabase.open(tmp_path / "skillstate.db")
    ledger = await Ledger.open(db)
    await ledger.append([_row(1), _row(2, ts=T0 + 40 * 86_400)])
    recorder = Recorder(
        ledger, lambda model, usage: None, retention_days=30, clock=lambda: T0 + 40 * 86_400
    )
    await recorder.start()
    await recorder.close()
    assert (await report(ledger))["totals"]["requests"] == 1  # the 40-day-old row went
    await ledger.close()
    await db.close()


async def test_estimated_rows_are_counted_and_their_cost_shown_apart(ledger: LedgerStore) -> None:
    """Defect 7 of issue 25: a reply whose provider reported no usage is an estimate, and
    /cost says how many rows and how much of the cost are."""
    await ledger.append([_row(1), _row(2, estimated=True, cost_usd=0.004)])
    totals = (await report(ledger))["totals"]
    assert totals["estimated_requests"] == 1 and totals["unpriced_requests"] == 0
    assert totals["cost_usd"] == pytest.approx(0.014)
    assert totals["estimated_cost_usd"] == pytest.approx(0.004)
    newest, _ = await latest(ledger, 10)
    assert newest["estimated"] is True


async def test_an_estimated_row_of_an_unpriced_model_is_unpriced_too(ledger: LedgerStore) -> None:
    await ledger.append([_row(1, model="local", estimated=True, cost_usd=None)])
    totals = (await report(ledger))["totals"]
    assert (totals["estimated_requests"], totals["unpriced_requests"]) == (1, 1)
    assert totals["cost_usd"] is None and totals["estimated_cost_usd"] is None
    # (no row of the ledger is priced: a sum of none is unknown)


OLD_TABLE = (
    "CREATE TABLE ledger (id INTEGER PRIMARY KEY, ts REAL NOT NULL, request_id TEXT NOT NULL,"
    " round INTEGER NOT NULL, session TEXT NOT NULL, client_wire TEXT NOT NULL,"
    " upstream TEXT NOT NULL, model TEXT NOT NULL, mode TEXT NOT NULL, lanes TEXT NOT NULL,"
    " status INTEGER NOT NULL, streamed INTEGER NOT NULL, input INTEGER, cached_input INTEGER,"
    " cache_write INTEGER, cache_write_1h INTEGER, output INTEGER, reasoning INTEGER,"
    " cost_usd REAL, passthrough_input INTEGER, passthrough_cached_input INTEGER,"
    " passthrough_cache_write INTEGER, passthrough_cost_usd REAL, overhead_ms REAL,"
    " upstream_ms REAL)"
)
"""The table as an older gateway made it: no ``cause``, ``attempts`` or ``estimated``."""


async def test_a_table_an_older_gateway_made_gets_the_columns_it_lacks(tmp_path: Path) -> None:
    db = await SQLiteDatabase.open(tmp_path / "skillstate.db")

    def old(conn: Any) -> None:
        conn.execute(OLD_TABLE)
        conn.execute(
            "INSERT INTO ledger (ts, request_id, round, session, client_wire, upstream, model,"
            " mode, lanes, status, streamed, input, output, cost_usd) VALUES"
            f" ({T0}, 'r0', 0, 's1', 'openai-chat', 'default', 'gpt-4o', 'off', '', 200, 0,"
            " 100, 10, 0.001)"
        )

    await db.run(old)
    ledger = await Ledger.open(db)
    assert ledger.degraded is None
    await ledger.append([_row(1, estimated=True, cause="state", attempts="200", login="api-key")])
    rows = {row["request_id"]: row for row in await latest(ledger, 10)}
    assert rows["r0"]["estimated"] is False and rows["r0"]["cause"] == ""
    assert rows["r0"]["estimate_basis"] == ""
    assert (rows["r0"]["login"], rows["r1"]["login"]) == ("", "api-key")
    assert rows["r1"]["estimated"] is True and rows["r1"]["cause"] == "state"
    assert (await report(ledger))["totals"]["requests"] == 2
    await ledger.close()
    await db.close()


async def test_the_recorders_day_is_told_by_its_clock() -> None:
    """/cost tells the catalog's age by the ledger's clock, which a test gives."""
    recorder = Recorder(await Ledger.memory(), lambda model, usage: None, clock=lambda: 1.7646e9)
    assert recorder.today() == date(2025, 12, 1)
    await recorder.close()
    await recorder.ledger.close()


async def test_subscription_rows_are_neither_priced_nor_unpriced() -> None:
    """A subscription's rows count their tokens at no per-token price: not in
    ``unpriced_requests``, and a group of them alone costs 0 and saves 0; the unknown price
    of another row is still unknown beside them."""
    ledger = await Ledger.memory()
    subscription = {"login": "anthropic-subscription", "cost_usd": None, "lanes": ""}
    await ledger.append(
        [
            _row(1, **subscription, input=500, passthrough_cost_usd=None),
            _row(2, login="api-key", model="unknown-model", cost_usd=None),
            _row(3, login="api-key", cost_usd=0.002, passthrough_cost_usd=0.003),
        ]
    )
    doc = await report(ledger)
    totals = doc["totals"]
    assert (totals["subscription_requests"], totals["unpriced_requests"]) == (1, 1)
    assert totals["cost_usd"] == pytest.approx(0.002)
    assert totals["logins"] == {"anthropic-subscription": 1, "api-key": 2}
    assert totals["rewritten_requests"] == 2
    groups = {group["login"]: group for group in doc["by_login"]}
    alone = groups["anthropic-subscription"]
    assert (alone["cost_usd"], alone["saved_usd"], alone["passthrough_cost_usd"]) == (0, 0, 0)
    assert alone["input_tokens"] == 500 and alone["unpriced_requests"] == 0
    unknown = {group["model"]: group for group in doc["by_model"]}["unknown-model"]
    assert unknown["cost_usd"] is None and unknown["unpriced_requests"] == 1
    await ledger.close()
