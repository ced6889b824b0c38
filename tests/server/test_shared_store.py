"""Gateways on one PostgreSQL store (``store = "postgresql://..."``): a session whose requests
alternate between two instances on every wire, JSON and stream, keeps every patch either made,
and each instance shows the other's Σ; /health says where Σ is kept; a database that cannot be
reached at start leaves the gateway serving, in memory, and /health says so. Hybrid mode
across instances (a boundary, recall) is ``test_shared_hybrid``'s."""

from __future__ import annotations

import aiohttp
import pytest
from shared_sessions import noting
from tool_loops import ROUTES, tool_loop

from skillstate.storage.postgres import SCHEMA_VERSION, PostgresStateStore
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for

STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
WIRES = pytest.mark.parametrize("wire", sorted(ROUTES))


@pytest.fixture
def store_url(postgres_url: str) -> str:
    return postgres_url


@STREAMS
@WIRES
async def test_two_instances_serve_one_session_and_keep_every_patch(
    store_url: str, wire: str, stream: bool
) -> None:
    session = f"shared-{wire}-{stream}"
    headers = {"x-skillstate-session": session, "x-skillstate-mode": "paper"}
    settings = {"store": store_url}
    outputs: list[tuple[str, str]] = []
    async with (
        ScriptedUpstream(noting) as up,
        gateway_for(up.url, settings=settings) as one,
        gateway_for(up.url, settings=settings) as two,
        aiohttp.ClientSession() as http,
    ):
        for step in range(6):
            outputs.append((f"call_{step}", f"output of step {step}"))
            gateway = (one, two)[step % 2]
            seen = len(up.requests)
            body = tool_loop(wire, stream, "Note every step.", outputs)
            async with http.post(gateway.url + ROUTES[wire], json=body, headers=headers) as r:
                assert r.status == 200, await r.text()
                await r.read()
            (sent,) = up.requests[seen:]
            # Σ as this instance sent it holds the patch the other instance committed
            assert all(f"step-{n}" in sent.body.decode() for n in range(step))
        assert one.context.stores is not None and one.context.stores.shared is not None
        record = await PostgresStateStore(one.context.stores.shared).load(session)
    assert set(record.state["findings"]) == {f"step-{n}" for n in range(6)}


async def test_health_says_where_sigma_is_kept(store_url: str) -> None:
    async with (
        ScriptedUpstream(noting) as up,
        gateway_for(up.url, settings={"store": store_url}) as gateway,
        aiohttp.ClientSession() as http,
        http.get(gateway.url + "/health") as reply,
    ):
        store = (await reply.json())["store"]
    assert store["kind"] == "postgresql" and store["ok"] is True
    assert store["schema_version"] == SCHEMA_VERSION and store["latency_ms"] >= 0


async def test_a_store_that_cannot_be_reached_at_start_leaves_the_gateway_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    unreachable = "postgresql://postgres:secret@127.0.0.1:9/none"
    headers = {"x-skillstate-session": "cut-off", "x-skillstate-mode": "paper"}
    async with (
        ScriptedUpstream(noting) as up,
        gateway_for(up.url, settings={"store": unreachable}) as gateway,
        aiohttp.ClientSession() as http,
    ):
        body = tool_loop("chat", False, "Note every step.", [("call_0", "output")])
        async with http.post(gateway.url + ROUTES["chat"], json=body, headers=headers) as r:
            assert r.status == 200, await r.text()
        async with http.get(gateway.url + "/health") as reply:
            health = await reply.json()
    assert health["status"] == "degraded"
    assert health["store"]["kind"] == "memory" and health["store"]["ok"] is False
    assert health["store"]["degraded"]
    said = [r.getMessage() for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(said) == 1 and "secret" not in said[0] and "postgres:***@" in said[0]
