"""PostgreSQL and Redis stopped mid-run, then started again (cut off by loopback proxies,
``testing.tcp_proxy``, as a stopped server looks to its clients): no client request fails
because of it, on any wire, JSON or stream; /health says what is down while it is; and once
the database answers again the patches the gateway committed in memory meanwhile are in it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from shared_sessions import noting
from tool_loops import ROUTES, tool_loop

from skillstate.storage.postgres import PostgresDatabase, PostgresStateStore
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import RunningGateway, gateway_for
from skillstate.testing.tcp_proxy import TcpProxy

REDIS_PORT = 6379


async def health(http: aiohttp.ClientSession, gateway: RunningGateway) -> dict[str, Any]:
    async with http.get(gateway.url + "/health") as reply:
        return dict(await reply.json())


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_postgres_and_redis_stopped_mid_run_fail_no_request(
    postgres_url: str, tmp_path: Path, wire: str, stream: bool
) -> None:
    session = f"outage-{wire}-{stream}"
    headers = {"x-skillstate-session": session, "x-skillstate-mode": "paper"}
    outputs: list[tuple[str, str]] = []
    async with (
        TcpProxy(urlsplit(postgres_url).port or 5432) as database,
        TcpProxy(REDIS_PORT) as redis,
        ScriptedUpstream(noting) as up,
    ):
        config = tmp_path / "skillstate.toml"
        config.write_text(
            f'[[upstreams]]\nname = "limited-{wire}-{stream}"\nbase_url = "{up.url}"\n'
            'rpm = 1000\nmodels = ["*"]\nprofile = "openai"\n'
        )
        settings = {"store": database.url(postgres_url), "redis": redis.url("redis://x/0")}
        async with (
            gateway_for(config_path=str(config), settings=settings) as gateway,
            aiohttp.ClientSession() as http,
        ):
            for step in range(6):
                if step == 2:
                    await database.cut()
                    await redis.cut()
                if step == 4:
                    down = await health(http, gateway)
                    await database.restore()
                    await redis.restore()
                    for _ in range(100):  # the store is tried again every 2 s
                        if (await health(http, gateway))["status"] == "ok":
                            break
                        await asyncio.sleep(0.1)
                outputs.append((f"call_{step}", f"output of step {step}"))
                body = tool_loop(wire, stream, "Note every step.", outputs)
                route = gateway.url + ROUTES[wire]
                async with http.post(route, json=body, headers=headers) as reply:
                    assert reply.status == 200, await reply.text()
                    assert "noted" in await reply.text()
            back = await health(http, gateway)
    assert down["status"] == "degraded"
    assert down["store"]["kind"] == "memory" and down["store"]["ok"] is False
    assert down["redis"]["ok"] is False
    assert back["status"] == "ok", back
    db = await PostgresDatabase.open(postgres_url)
    try:
        record = await PostgresStateStore(db).load(session)
    finally:
        await db.close()
    assert set(record.state["findings"]) == {f"step-{n}" for n in range(6)}


async def test_a_database_down_at_start_is_used_once_it_answers(postgres_url: str) -> None:
    """The gateway starts in memory, serves, and moves to the database when it comes up,
    with what it committed meanwhile."""
    session = "down-at-start"
    headers = {"x-skillstate-session": session, "x-skillstate-mode": "paper"}
    outputs: list[tuple[str, str]] = []
    async with TcpProxy(urlsplit(postgres_url).port or 5432) as database:
        await database.cut()
        async with (
            ScriptedUpstream(noting) as up,
            gateway_for(up.url, settings={"store": database.url(postgres_url)}) as gateway,
            aiohttp.ClientSession() as http,
        ):
            for step in range(4):
                if step == 2:
                    down = await health(http, gateway)
                    await database.restore()
                    for _ in range(100):
                        if (await health(http, gateway))["status"] == "ok":
                            break
                        await asyncio.sleep(0.1)
                outputs.append((f"call_{step}", f"output of step {step}"))
                body = tool_loop("chat", False, "Note every step.", outputs)
                async with http.post(gateway.url + ROUTES["chat"], json=body, headers=headers) as r:
                    assert r.status == 200, await r.text()
            back = await health(http, gateway)
    assert down["store"]["kind"] == "memory" and down["store"]["ok"] is False
    assert back["store"]["kind"] == "postgresql" and back["store"]["ok"] is True
    assert back["store"]["schema_version"] >= 1
    db = await PostgresDatabase.open(postgres_url)
    try:
        record = await PostgresStateStore(db).load(session)
    finally:
        await db.close()
    assert set(record.state["findings"]) == {f"step-{n}" for n in range(4)}


async def test_a_session_another_gateway_served_meanwhile_is_counted_not_overwritten(
    postgres_url: str,
) -> None:
    """Cut off, one gateway serves a session from memory while another serves it from the
    database: once back, the database keeps the other's Σ, and /health counts the session
    the first could not write back."""
    session = "served-twice"
    headers = {"x-skillstate-session": session, "x-skillstate-mode": "paper"}
    async with (
        TcpProxy(urlsplit(postgres_url).port or 5432) as database,
        ScriptedUpstream(noting) as up,
        gateway_for(up.url, settings={"store": database.url(postgres_url)}) as cut,
        gateway_for(up.url, settings={"store": postgres_url}) as other,
        aiohttp.ClientSession() as http,
    ):

        async def step(gateway: RunningGateway, n: int) -> None:
            body = tool_loop("chat", False, "Note every step.", [(f"call_{n}", "output")])
            async with http.post(gateway.url + ROUTES["chat"], json=body, headers=headers) as r:
                assert r.status == 200, await r.text()

        await step(cut, 0)
        await database.cut()
        await step(cut, 1)  # in memory
        await step(other, 2)  # in the database
        await database.restore()
        for _ in range(100):
            if (await health(http, cut))["status"] == "ok":
                break
            await asyncio.sleep(0.1)
        back = await health(http, cut)
        assert other.context.stores is not None and other.context.stores.shared is not None
        record = await PostgresStateStore(other.context.stores.shared).load(session)
    assert back["status"] == "ok" and back["store"]["unwritten"] == 1
    assert set(record.state["findings"]) == {"step-0", "step-2"}
