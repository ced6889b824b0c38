"""The audit log through real gateways: a reset and a collapse (``DELETE /state``, ``POST
/state/collapse``) are recorded with who took them, the session and the client's address, and
``GET /audit`` reads them back, filtered; a gateway with a token names the token; two gateways
on one PostgreSQL write one log; an audit write the database refuses does not fail the reset."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp

from skillstate.gateway import RunningGateway
from skillstate.storage import Change, StateRecord
from skillstate.storage.audit import AuditQuery, SQLiteAudit
from skillstate.storage.sqlite import DB_NAME
from skillstate.support import jsonio
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

TOKEN = "gateway-token-0123456789abcdef"


def answering(_: object) -> Reply:
    return Reply(text="ok")


async def seed(gateway: RunningGateway, session: str) -> None:
    """A session with a committed Σ, as a first turn would leave it."""
    engine = gateway.context.engine
    assert engine is not None
    record: StateRecord = await engine.store.load(session)
    await engine.store.commit(
        session, Change({"goal": session}, step=1), expected_version=record.version
    )


async def call(
    http: aiohttp.ClientSession,
    gateway: RunningGateway,
    method: str,
    path: str,
    headers: Mapping[str, str] | None = None,
    **query: str,
) -> tuple[int, Any]:
    url = gateway.url + path
    async with http.request(method, url, params=query, headers=headers) as reply:
        return reply.status, jsonio.loads(await reply.read())


async def test_a_reset_and_a_collapse_are_recorded_and_read_back(tmp_path: Path) -> None:
    settings = {"data_dir": str(tmp_path)}
    async with (
        ScriptedUpstream(answering) as up,
        gateway_for(up.url, settings=settings) as gateway,
        aiohttp.ClientSession() as http,
    ):
        assert await call(http, gateway, "GET", "/audit") == (200, {"audit": []})
        for session in ("one", "two"):
            await seed(gateway, session)
        assert (await call(http, gateway, "POST", "/state/collapse", session="one"))[0] == 202
        assert (await call(http, gateway, "DELETE", "/state", session="two"))[0] == 200
        assert (await call(http, gateway, "DELETE", "/state", session="never"))[0] == 404

        status, body = await call(http, gateway, "GET", "/audit")
        assert status == 200
        reset, collapse = body["audit"]
        assert (reset["action"], reset["target"], reset["who"]) == (
            "session.reset",
            "two",
            "loopback",
        )
        assert reset["detail"] == {"client": "127.0.0.1", "archive_entries_forgotten": 0}
        assert (collapse["action"], collapse["target"]) == ("session.collapse", "one")
        assert collapse["detail"] == {"client": "127.0.0.1"}
        assert reset["when"] >= collapse["when"] > 0

        _, only = await call(http, gateway, "GET", "/audit", action="session.collapse")
        assert [entry["target"] for entry in only["audit"]] == ["one"]
        _, one = await call(http, gateway, "GET", "/audit", limit="1")
        assert [entry["target"] for entry in one["audit"]] == ["two"]
        _, later = await call(http, gateway, "GET", "/audit", since="2999-01-01")
        assert later == {"audit": []}
        status, bad = await call(http, gateway, "GET", "/audit", limit="0")
        assert status == 400 and "limit" in bad["error"]["message"]
    # In the SQLite file under the data directory, for `skillstate audit` to read.
    conn = sqlite3.connect(tmp_path / DB_NAME)
    try:
        rows = conn.execute("SELECT action, target FROM audit ORDER BY id").fetchall()
    finally:
        conn.close()
    assert rows == [("session.collapse", "one"), ("session.reset", "two")]


async def test_a_gateway_with_a_token_records_the_token(tmp_path: Path) -> None:
    settings = {"data_dir": str(tmp_path)}
    headers = {"x-skillstate-token": TOKEN}
    async with (
        ScriptedUpstream(answering) as up,
        gateway_for(up.url, settings=settings, environ={"SKILLSTATE_AUTH_TOKEN": TOKEN}) as gw,
        aiohttp.ClientSession() as http,
    ):
        await seed(gw, "kept")
        assert (await call(http, gw, "DELETE", "/state", headers, session="kept"))[0] == 200
        _, body = await call(http, gw, "GET", "/audit", headers)
        assert [(e["who"], e["target"]) for e in body["audit"]] == [("token", "kept")]


async def test_two_gateways_on_one_postgresql_write_one_log(postgres_url: str) -> None:
    from skillstate.testing.postgres import database

    async with database():  # emptied
        pass
    settings = {"store": postgres_url}
    async with (
        ScriptedUpstream(answering) as up,
        gateway_for(up.url, settings=settings) as one,
        gateway_for(up.url, settings=settings) as two,
        aiohttp.ClientSession() as http,
    ):
        assert one.context.audit is not None and one.context.audit.kind == "postgresql"
        await seed(one, "shared-a")
        await seed(one, "shared-b")
        assert (await call(http, one, "DELETE", "/state", session="shared-a"))[0] == 200
        assert (await call(http, two, "POST", "/state/collapse", session="shared-b"))[0] == 202
        for gateway in (one, two):
            _, body = await call(http, gateway, "GET", "/audit")
            found = [(e["action"], e["target"]) for e in body["audit"]]
            assert found == [("session.collapse", "shared-b"), ("session.reset", "shared-a")]


async def test_an_audit_write_the_database_refuses_does_not_fail_the_reset(
    tmp_path: Path,
) -> None:
    """Another connection puts a trigger on the gateway's SQLite file that refuses every
    INSERT into the audit table: the reset still answers 200, the entry is shown from memory
    with the log degraded, and written to the file once the trigger is gone."""
    settings = {"data_dir": str(tmp_path)}
    path = tmp_path / DB_NAME
    async with (
        ScriptedUpstream(answering) as up,
        gateway_for(up.url, settings=settings) as gateway,
        aiohttp.ClientSession() as http,
    ):
        await seed(gateway, "first")
        await seed(gateway, "second")
        _outside(
            path,
            "CREATE TRIGGER refuse BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'no'); END",
        )
        status, body = await call(http, gateway, "DELETE", "/state", session="first")
        assert (status, body["reset"]) == (200, True)
        audit = gateway.context.audit
        assert audit is not None and audit.degraded is not None
        _, shown = await call(http, gateway, "GET", "/audit")
        assert [e["target"] for e in shown["audit"]] == ["first"]
        assert _outside(path, "SELECT count(*) FROM audit") == [(0,)]

        _outside(path, "DROP TRIGGER refuse")
        assert (await call(http, gateway, "DELETE", "/state", session="second"))[0] == 200
        assert audit.degraded is None
        database = gateway.context.stores.database if gateway.context.stores else None
        assert database is not None
        written = await SQLiteAudit(database).entries(AuditQuery())
        assert [entry.target for entry in written] == ["second", "first"]


def _outside(path: Path, sql: str) -> list[tuple[Any, ...]]:
    """``sql`` on a connection of its own to the gateway's file."""
    conn = sqlite3.connect(path, timeout=5)
    try:
        rows = conn.execute(sql).fetchall()
        conn.commit()
        return rows
    finally:
        conn.close()
