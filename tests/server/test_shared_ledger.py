"""The ledger of gateways on one PostgreSQL store (``store = "postgresql://..."``): /cost,
/cost/requests and ``skillstate stats`` on either instance sum the requests both served; a
database that fails mid-run moves the ledger to the instance's own SQLite file, every request
still answered and /cost saying why; one that cannot be reached at start leaves each instance
its own ledger, and /cost says so; once the database answers again, the rows kept meanwhile
are copied to it."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import asyncpg
import pytest
from click.testing import CliRunner

from skillstate.cli.main import cli
from skillstate.gateway import RunningGateway
from skillstate.storage.failover import RETRY_SECONDS
from skillstate.testing import Reply, ScriptedUpstream, postgres
from skillstate.testing.gateway import gateway_for
from skillstate.testing.tcp_proxy import TcpProxy

BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}


def _answer(_: Any) -> Reply:
    return Reply(text="ok", input_tokens=100, output_tokens=5)


async def _ask(http: aiohttp.ClientSession, gateway: RunningGateway, session: str) -> None:
    headers = {"x-skillstate-session": session, "x-skillstate-mode": "off"}
    async with http.post(gateway.url + "/v1/chat/completions", json=BODY, headers=headers) as reply:
        assert reply.status == 200, await reply.text()
        await reply.read()


async def _json(http: aiohttp.ClientSession, url: str) -> Any:
    async with http.get(url) as reply:
        assert reply.status == 200, await reply.text()
        return await reply.json()


async def test_either_instance_shows_the_requests_of_both(postgres_url: str) -> None:
    settings = {"store": postgres_url}
    async with postgres.database():  # emptied of what other tests of this process wrote
        pass
    async with (
        ScriptedUpstream(_answer) as up,
        gateway_for(up.url, settings=settings) as one,
        gateway_for(up.url, settings=settings) as two,
        aiohttp.ClientSession() as http,
    ):
        for gateway, session in ((one, "on-one"), (two, "on-two"), (two, "on-two")):
            await _ask(http, gateway, session)
        for gateway in (one, two):  # /cost waits only for its own instance's rows
            assert gateway.context.recorder is not None
            await gateway.context.recorder.flush()
        docs = [await _json(http, gateway.url + "/cost") for gateway in (one, two)]
        rows = [await _json(http, gateway.url + "/cost/requests") for gateway in (one, two)]
        stats = await asyncio.to_thread(
            CliRunner().invoke, cli, ["stats", "--json", "--url", one.url]
        )
    for doc in docs:
        assert "degraded" not in doc
        assert doc["totals"]["requests"] == 3 and doc["totals"]["input_tokens"] == 300
        assert {g["session"]: g["requests"] for g in doc["by_session"]} == {
            "on-one": 1,
            "on-two": 2,
        }
    assert docs[0]["totals"] == docs[1]["totals"]
    for answer in rows:
        assert sorted(row["session"] for row in answer["requests"]) == ["on-one", *["on-two"] * 2]
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.output)["totals"] == docs[0]["totals"]


async def test_a_database_that_fails_mid_run_moves_the_ledger_to_the_local_file(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The database stops taking connections and drops those it had: the requests after it
    are answered all the same, their rows kept in the instance's SQLite file, which /cost
    reads from then on, saying why; the failure is logged once."""
    name = postgres_url.rsplit("/", 1)[1]
    async with (
        ScriptedUpstream(_answer) as up,
        gateway_for(up.url, settings={"store": postgres_url}) as gateway,
        aiohttp.ClientSession() as http,
    ):
        await _ask(http, gateway, "before")
        assert "degraded" not in await _json(http, gateway.url + "/cost")
        admin = await asyncpg.connect(postgres.ADMIN_DSN)
        try:
            await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
                name,
            )
            for _ in range(3):
                await _ask(http, gateway, "after")
            doc = await _json(http, gateway.url + "/cost")
        finally:
            await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            await admin.close()
    assert "PostgreSQL database failed" in doc["degraded"]
    assert "SQLite database" in doc["degraded"]
    assert {g["session"]: g["requests"] for g in doc["by_session"]} == {"after": 3}
    said = [r for r in caplog.records if r.name == "skillstate.economics.ledger"]
    assert len(said) == 1 and said[0].levelno == logging.WARNING


async def test_a_store_not_reached_at_start_keeps_the_ledger_local_and_says_so() -> None:
    unreachable = "postgresql://postgres@127.0.0.1:9/none"
    async with (
        ScriptedUpstream(_answer) as up,
        gateway_for(up.url, settings={"store": unreachable}) as gateway,
        aiohttp.ClientSession() as http,
    ):
        await _ask(http, gateway, "alone")
        doc = await _json(http, gateway.url + "/cost")
    assert "the shared store could not be opened" in doc["degraded"]
    assert doc["totals"]["requests"] == 1


@pytest.mark.parametrize("at_start", [False, True], ids=["mid-run", "at-start"])
async def test_the_rows_kept_while_the_database_was_down_reach_it_once_it_answers(
    postgres_url: str, at_start: bool
) -> None:
    """Cut off (mid-run, or before the gateway started), the ledger keeps its rows in the
    instance's file; once the database answers, the next batch copies them to it, so another
    instance's /cost counts them, and the ledger is back on it."""
    async with postgres.database():  # emptied of what other tests of this process wrote
        pass
    async with TcpProxy(urlsplit(postgres_url).port or 5432) as database:
        if at_start:
            await database.cut()
        async with (
            ScriptedUpstream(_answer) as up,
            gateway_for(up.url, settings={"store": database.url(postgres_url)}) as cut,
            gateway_for(up.url, settings={"store": postgres_url}) as other,
            aiohttp.ClientSession() as http,
        ):
            assert cut.context.recorder is not None
            if not at_start:
                await _ask(http, cut, "before")
                await cut.context.recorder.flush()
                await database.cut()
            for _ in range(2):
                await _ask(http, cut, "during")
            await cut.context.recorder.flush()
            assert "degraded" in await _json(http, cut.url + "/cost")
            await database.restore()
            await asyncio.sleep(RETRY_SECONDS + 0.2)
            await _ask(http, cut, "after")  # its batch tries the database again
            await cut.context.recorder.flush()
            mine = await _json(http, cut.url + "/cost")
            theirs = await _json(http, other.url + "/cost")
    assert "degraded" not in mine
    counted = {g["session"]: g["requests"] for g in theirs["by_session"]}
    assert counted == {"during": 2, "after": 1} | ({} if at_start else {"before": 1})
