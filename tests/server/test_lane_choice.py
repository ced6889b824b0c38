"""A request chooses its own lanes with ``x-skillstate-lanes: a,b`` (this request only), from
every lane the gateway built, switched off in the config or not; an unknown name is refused in
the client's own wire, before anything goes upstream."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

ROUTES = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}


def body(wire: str, stream: bool = False) -> dict[str, Any]:
    """A first request with a tool (hybrid mode's state lane takes only those)."""
    said: dict[str, Any] = {"model": "m", "stream": stream}
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    if wire == "responses":
        tool = {"type": "function", "name": "read", "parameters": schema}
        return said | {"input": "Say hi.", "tools": [tool]}
    if wire == "messages":
        said |= {"max_tokens": 16, "tools": [{"name": "read", "input_schema": schema}]}
    else:
        said["tools"] = [{"type": "function", "function": {"name": "read", "parameters": schema}}]
    return said | {"messages": [{"role": "user", "content": "Say hi."}]}


async def post(
    http: aiohttp.ClientSession, url: str, sent: dict[str, Any], headers: dict[str, str]
) -> tuple[int, str, bytes]:
    async with http.post(url, json=sent, headers=headers) as reply:
        # The state lane's mark: it ran (the x-skillstate-lanes summary may be empty before
        # its first boundary).
        return reply.status, reply.headers.get("x-skillstate-mode", ""), await reply.read()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_a_request_runs_only_the_lanes_it_names(wire: str, stream: bool) -> None:
    async with (
        ScriptedUpstream(lambda r: Reply(text="hi")) as up,
        gateway_for(up.url, settings={"mode": "hybrid"}) as gw,
        aiohttp.ClientSession() as http,
    ):
        url = gw.url + ROUTES[wire]
        status, ran, _ = await post(http, url, body(wire, stream), {})
        assert status == 200 and ran == "hybrid"  # every lane, by default
        headers = {"x-skillstate-lanes": "compaction"}
        status, ran, _ = await post(http, url, body(wire, stream), headers)
        assert status == 200 and ran == ""


@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_a_request_may_ask_for_a_lane_switched_off(wire: str) -> None:
    async with (
        ScriptedUpstream(lambda r: Reply(text="hi")) as up,
        gateway_for(up.url, settings={"mode": "hybrid", "lanes": "compaction"}) as gw,
        aiohttp.ClientSession() as http,
    ):
        url = gw.url + ROUTES[wire]
        status, ran, _ = await post(http, url, body(wire), {})
        assert status == 200 and ran == ""  # off in the config
        status, ran, _ = await post(http, url, body(wire), {"x-skillstate-lanes": "state"})
        assert status == 200 and ran == "hybrid"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_an_unknown_lane_is_refused_in_the_clients_wire(wire: str, stream: bool) -> None:
    async with (
        ScriptedUpstream(lambda r: Reply(text="hi")) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
    ):
        headers = {"x-skillstate-lanes": "state,sate"}
        status, _, said = await post(http, gw.url + ROUTES[wire], body(wire, stream), headers)
        assert status == 400
        text = said.decode()
        assert "x-skillstate-lanes" in text and "'sate' is unknown" in text
        assert ('"type":"error"' in text) if wire == "messages" else ('"error":{' in text)
        assert up.requests == []
