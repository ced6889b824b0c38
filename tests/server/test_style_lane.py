"""The concise-output lane through the gateway, on every wire, JSON and stream: switched on,
its one instruction joins the system prompt, the same bytes on every request (so it stays in
the cached prefix), naming what is never shortened; ``x-skillstate-style: off`` leaves one
request without it; an unknown style is refused in the client's wire."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from skillstate.pipeline.style_lane import INSTRUCTIONS
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

ROUTES = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}
CONCISE = INSTRUCTIONS["concise"]


def body(wire: str, stream: bool, turn: int) -> dict[str, Any]:
    said: dict[str, Any] = {"model": "m", "stream": stream}
    asks = [{"role": "user", "content": f"Question {n}."} for n in range(turn)]
    if wire == "responses":
        return said | {"instructions": "You help.", "input": asks}
    if wire == "messages":
        return said | {"max_tokens": 16, "system": "You help.", "messages": asks}
    return said | {"messages": [{"role": "system", "content": "You help."}, *asks]}


def system_of(wire: str, sent: dict[str, Any]) -> str:
    """The system prompt as the upstream got it, in its own wire's place."""
    if wire == "responses":
        return str(sent["instructions"])
    if wire == "messages":
        system = sent["system"]
        return system if isinstance(system, str) else "".join(b["text"] for b in system)
    return "".join(
        m["content"] if isinstance(m["content"], str) else "".join(p["text"] for p in m["content"])
        for m in sent["messages"]
        if m["role"] == "system"
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_the_instruction_is_in_the_system_prompt_the_same_on_every_request(
    wire: str, stream: bool
) -> None:
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url, settings={"lanes": "compaction,style,state"}) as gw,
        aiohttp.ClientSession() as http,
    ):
        url = gw.url + ROUTES[wire]
        headers = {"x-skillstate-session": f"style-{wire}-{stream}"}
        for turn in (1, 2, 3):
            async with http.post(url, json=body(wire, stream, turn), headers=headers) as r:
                assert r.status == 200, await r.text()
                assert "style=concise" in r.headers.get("x-skillstate-lanes", "")
                await r.read()
        systems = {system_of(wire, request.json) for request in up.requests}
        assert len(systems) == 1  # byte-identical across the session
        (system,) = systems
        assert "You help." in system and CONCISE in system  # the client's and ours
        assert "error messages: give those in full" in CONCISE  # what is never shortened
        off = headers | {"x-skillstate-style": "off"}
        async with http.post(url, json=body(wire, stream, 4), headers=off) as r:
            assert r.status == 200
            await r.read()
        assert CONCISE not in system_of(wire, up.requests[-1].json)


@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_an_unknown_style_is_refused(wire: str) -> None:
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
    ):
        headers = {"x-skillstate-style": "Shakespearean"}
        async with http.post(
            gw.url + ROUTES[wire], json=body(wire, False, 1), headers=headers
        ) as r:
            assert r.status == 400
            said = await r.text()
        assert "x-skillstate-style" in said and "concise" in said
        assert up.requests == []


async def test_off_by_default() -> None:
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
    ):
        async with http.post(gw.url + ROUTES["chat"], json=body("chat", False, 1)) as r:
            assert r.status == 200
        assert CONCISE not in system_of("chat", up.requests[-1].json)
