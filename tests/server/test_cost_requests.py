"""GET /cost/requests on real loopback: the ledger's newest rows, no content, with the filters of
/cost and a bounded limit (the dashboard's "Latest requests" table)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from skillstate.economics.ledger.row import COLUMNS
from skillstate.gateway import RunningGateway
from skillstate.support import jsonio
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for


@dataclass
class Rig:
    gateway: RunningGateway
    http: aiohttp.ClientSession

    async def chat(self, session: str, text: str) -> None:
        body = {"model": "test-model", "messages": [{"role": "user", "content": text}]}
        url = self.gateway.url + "/v1/chat/completions"
        headers = {"x-skillstate-session": session}
        async with self.http.post(url, json=body, headers=headers) as reply:
            assert reply.status == 200, await reply.text()

    async def get(self, path: str, **query: str) -> tuple[int, Any]:
        async with self.http.get(self.gateway.url + path, params=query) as reply:
            return reply.status, jsonio.loads(await reply.read())


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    def answer(_: object) -> Reply:
        return Reply(text="ok", input_tokens=40, output_tokens=3)

    async with (
        ScriptedUpstream(answer) as upstream,
        gateway_for(upstream.url) as gateway,
        aiohttp.ClientSession() as http,
    ):
        yield Rig(gateway, http)


async def test_latest_requests_are_the_ledgers_newest_rows_without_content(rig: Rig) -> None:
    assert await rig.get("/cost/requests") == (
        200,
        {"label": "recorded cost, not a provider invoice", "requests": []},
    )
    for session, text in (("one", "aardvark"), ("two", "badger"), ("one", "cormorant")):
        await rig.chat(session, text)
    status, body = await rig.get("/cost/requests")
    assert status == 200
    rows = body["requests"]
    assert [row["session"] for row in rows] == ["one", "two", "one"]
    assert all(tuple(row) == COLUMNS for row in rows)
    assert [row["ts"] for row in rows] == sorted((row["ts"] for row in rows), reverse=True)
    assert rows[0]["input"] == 40 and rows[0]["output"] == 3 and rows[0]["streamed"] is False
    assert "aardvark" not in jsonio.dumps(body).decode()

    _, limited = await rig.get("/cost/requests", limit="2")
    assert limited["requests"] == rows[:2]
    _, filtered = await rig.get("/cost/requests", session="two")
    assert [row["session"] for row in filtered["requests"]] == ["two"]
    _, cost = await rig.get("/cost")
    assert cost["totals"]["requests"] == len(rows)


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ({"limit": "0"}, "limit must be"),
        ({"limit": "501"}, "limit must be"),
        ({"limit": "ten"}, "limit must be"),
        ({"limit": "-1"}, "limit must be"),
        ({"sessions": "x"}, "unknown filter 'sessions'; use limit, session"),
        ({"since": "yesterday"}, "is not an ISO 8601"),
    ],
)
async def test_latest_requests_refuse_a_bad_query(
    rig: Rig, query: dict[str, str], says: str
) -> None:
    status, body = await rig.get("/cost/requests", **query)
    assert status == 400
    assert says in body["error"]["message"]
    assert body["error"]["type"] == "invalid-request"
