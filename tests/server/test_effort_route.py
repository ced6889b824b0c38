"""Effort routing through the gateway: switched on, a request without an effort goes upstream
with the one its task calls for, in the upstream wire's own field (Chat's
``reasoning_effort``, Responses' ``reasoning.effort``), JSON and stream; the caller's own
effort is forwarded as it came; an unknown ``x-skillstate-effort`` is refused in the client's
wire."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

ROUTES = {"chat": "/v1/chat/completions", "responses": "/v1/responses"}
ON = {"lanes": "compaction,effort,state"}


def body(wire: str, stream: bool, text: str, **more: Any) -> dict[str, Any]:
    if wire == "responses":
        return {"model": "gpt-5", "stream": stream, "input": text, **more}
    return {
        "model": "gpt-5",
        "stream": stream,
        "messages": [{"role": "user", "content": text}],
    } | more


def effort_of(wire: str, sent: dict[str, Any]) -> str | None:
    if wire == "responses":
        return (sent.get("reasoning") or {}).get("effort")
    return sent.get("reasoning_effort")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_the_task_picks_the_effort_and_the_caller_wins(wire: str, stream: bool) -> None:
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url, settings=ON) as gw,
        aiohttp.ClientSession() as http,
    ):
        url = gw.url + ROUTES[wire]
        async with http.post(url, json=body(wire, stream, "Debug the deadlock.")) as r:
            assert r.status == 200, await r.text()
            assert "effort=high" in r.headers.get("x-skillstate-lanes", "")
            await r.read()
        assert effort_of(wire, up.requests[-1].json) == "high"
        own = (
            {"reasoning": {"effort": "minimal"}}
            if wire == "responses"
            else {"reasoning_effort": "minimal"}
        )
        async with http.post(url, json=body(wire, stream, "Debug it.", **own)) as r:
            assert r.status == 200
            await r.read()
        assert effort_of(wire, up.requests[-1].json) == "minimal"
        headers = {"x-skillstate-effort": "low"}
        async with http.post(url, json=body(wire, stream, "Debug it."), headers=headers) as r:
            assert r.status == 200
            await r.read()
        assert effort_of(wire, up.requests[-1].json) == "low"


@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_an_unknown_effort_is_refused(wire: str) -> None:
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url, settings=ON) as gw,
        aiohttp.ClientSession() as http,
    ):
        headers = {"x-skillstate-effort": "maximum"}
        async with http.post(
            gw.url + ROUTES[wire], json=body(wire, False, "Hi."), headers=headers
        ) as r:
            assert r.status == 400
            said = await r.text()
        assert "x-skillstate-effort" in said and "medium" in said and up.requests == []


async def test_off_by_default() -> None:
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
    ):
        async with http.post(gw.url + ROUTES["chat"], json=body("chat", False, "Debug it.")) as r:
            assert r.status == 200
        assert effort_of("chat", up.requests[-1].json) is None
