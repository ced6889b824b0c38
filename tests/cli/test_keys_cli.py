"""``skillstate keys create|list|revoke`` on the store a gateway uses: the SQLite file under
the data directory, or PostgreSQL with ``--store``. A key is printed once and never listed;
a running gateway on that store wants it from its next refresh; revoking ends it; both are
in the store's audit log."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
from click.testing import CliRunner

from skillstate.cli.main import cli
from skillstate.economics.allowance import period_of
from skillstate.storage.postgres import PostgresDatabase
from skillstate.storage.spend import Hold, PostgresSpendStore, SqliteSpendStore
from skillstate.storage.sqlite import DB_NAME, SQLiteDatabase
from skillstate.testing import Reply, ScriptedUpstream, postgres
from skillstate.testing.gateway import gateway_for


def keys(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(cli, ["keys", *args])
    return done.exit_code, done.stdout, done.stderr


def test_create_list_revoke_on_the_sqlite_file(tmp_path: Path) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    code, out, _ = keys("list", *data)
    assert code == 0 and "no keys yet" in out
    code, out, said = keys("create", "--tenant", "alice", "--models", "gpt-4*", *data)
    text = out.strip()
    assert code == 0 and text.startswith("ssk-") and "shown once" in said
    code, out, _ = keys("create", "--tenant", "ops", "--admin", "--expires", "2099-01-01", *data)
    assert code == 0
    code, out, _ = keys("list", "--json", *data)
    listed = json.loads(out)
    assert [(k["tenant"], k["admin"], k["models"]) for k in listed] == [
        ("alice", False, ["gpt-4*"]),
        ("ops", True, []),
    ]
    assert listed[1]["expires"] == 4070908800.0
    code, out, _ = keys("list", *data)
    assert text not in out and listed[0]["id"] in out and "alice" in out
    code, out, _ = keys("revoke", listed[0]["id"], *data)
    assert code == 0 and "revoked" in out
    code, out, _ = keys("list", *data)
    assert "revoked" in out.splitlines()[0]
    done = CliRunner().invoke(cli, ["audit", "--json", *data])
    logged = [(e["who"], e["action"], e["target"]) for e in json.loads(done.stdout)["audit"]]
    assert logged == [
        ("cli", "key.revoke", listed[0]["id"]),
        ("cli", "key.create", listed[1]["id"]),
        ("cli", "key.create", listed[0]["id"]),
    ]
    code, _, said = keys("revoke", "nothere", *data)
    assert code == 1 and "no key has the id" in said
    code, _, said = keys("create", "--tenant", "Not Valid", *data)
    assert code == 2


def test_create_and_list_on_postgresql(postgres_url: str) -> None:
    async def empty() -> None:
        async with postgres.database():
            pass

    asyncio.run(empty())
    code, out, _ = keys("create", "--tenant", "alice", "--store", postgres_url)
    assert code == 0 and out.startswith("ssk-")
    code, out, _ = keys("list", "--json", "--store", postgres_url)
    assert [k["tenant"] for k in json.loads(out)] == ["alice"]


async def test_a_running_gateway_wants_the_key_the_command_made(tmp_path: Path) -> None:
    data = tmp_path / "data"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    async with (
        ScriptedUpstream(lambda _: Reply(text="ok")) as up,
        gateway_for(up.url, settings={"data_dir": str(data)}) as gateway,
        aiohttp.ClientSession() as http,
    ):
        code, out, _ = await asyncio.to_thread(
            keys, "create", "--tenant", "alice", "--data-dir", str(data)
        )
        assert code == 0
        assert gateway.context.keys is not None
        await gateway.context.keys.refresh()  # what its refresher does every few seconds
        url = gateway.url + "/v1/chat/completions"
        async with http.post(url, json=body) as reply:
            assert reply.status == 401
        headers = {"authorization": f"Bearer {out.strip()}"}
        async with http.post(url, json=body, headers=headers) as reply:
            assert reply.status == 200


def test_a_keys_budget_is_made_listed_changed_and_audited(tmp_path: Path) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    made = ["create", "--tenant", "alice", "--budget", "5", "--period", "day", "--rpm", "30"]
    code, _, _ = keys(*made, *data)
    assert code == 0
    code, out, _ = keys("list", "--json", *data)
    (key,) = json.loads(out)
    assert (key["budget_usd"], key["period"], key["rpm"], key["tpm"]) == (5.0, "day", 30, None)
    assert "budget $5.00/day  rpm 30" in keys("list", *data)[1]
    code, out, _ = keys("budget", key["id"], "--budget", "12.5", "--tpm", "9000", *data)
    assert code == 0 and "budget $12.50/month  tpm 9000" in out
    (key,) = json.loads(keys("list", "--json", *data)[1])
    assert (key["budget_usd"], key["period"], key["rpm"], key["tpm"]) == (12.5, "month", None, 9000)
    done = CliRunner().invoke(cli, ["audit", "--json", *data])
    entries = json.loads(done.stdout)["audit"]
    assert [(e["who"], e["action"], e["target"]) for e in entries] == [
        ("cli", "budget.set", key["id"]),
        ("cli", "key.create", key["id"]),
    ]
    assert entries[0]["detail"]["budget_usd"] == 12.5 and entries[0]["detail"]["user"]
    assert entries[0]["when"]
    assert keys("budget", "nothere", "--budget", "1", *data)[0] == 1
    assert keys("budget", key["id"], "--budget", "-1", *data)[0] == 2
    assert keys("create", "--tenant", "bob", "--period", "week", *data)[0] == 2


async def _spend(open_db: Any, key_id: str, spent: float, held: float) -> None:
    """What a gateway would have written for ``key_id`` this day: ``spent`` settled, ``held``
    by a request in flight."""
    period = period_of("day", time.time())
    db = await open_db()
    try:
        store = SqliteSpendStore(db) if isinstance(db, SQLiteDatabase) else PostgresSpendStore(db)
        await store.settle(Hold("settled", key_id, period, 0.0), spent)
        assert isinstance(await store.reserve(key_id, period, held, 5.0, time.time()), Hold)
    finally:
        await db.close()


def test_a_keys_list_says_what_its_budget_spent_and_holds(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = ["create", "--tenant", "alice", "--budget", "5", "--period", "day"]
    assert keys(*made, "--data-dir", str(data))[0] == 0
    assert keys("create", "--tenant", "bob", "--data-dir", str(data))[0] == 0
    listed = json.loads(keys("list", "--json", "--data-dir", str(data))[1])
    alice, bob = listed
    assert (alice["spent_usd"], alice["held_usd"]) == (0.0, 0.0) and "spent_usd" not in bob
    asyncio.run(_spend(lambda: SQLiteDatabase.open(data / DB_NAME), alice["id"], 1.23, 0.5))
    alice, _ = json.loads(keys("list", "--json", "--data-dir", str(data))[1])
    today = period_of("day", time.time())
    assert (alice["spent_period"], alice["spent_usd"], alice["held_usd"]) == (today, 1.23, 0.5)
    line = keys("list", "--data-dir", str(data))[1].splitlines()[0]
    assert line.endswith(f"budget $5.00/day  {today}: $1.2300 spent, $0.5000 held"), line


def test_a_keys_spending_is_listed_from_postgresql(postgres_url: str) -> None:
    async def empty() -> None:
        async with postgres.database():
            pass

    asyncio.run(empty())
    made = ["create", "--tenant", "alice", "--budget", "5", "--period", "day"]
    assert keys(*made, "--store", postgres_url)[0] == 0
    (alice,) = json.loads(keys("list", "--json", "--store", postgres_url)[1])
    asyncio.run(_spend(lambda: PostgresDatabase.open(postgres_url), alice["id"], 2.0, 0.25))
    (alice,) = json.loads(keys("list", "--json", "--store", postgres_url)[1])
    assert (alice["spent_usd"], alice["held_usd"]) == (2.0, 0.25)
