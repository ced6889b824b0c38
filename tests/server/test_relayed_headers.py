"""What the provider sees of the client's ``User-Agent``, and what the client sees of the
provider's ``Content-Type``: the client's own agent goes up on every wire and path, aiohttp's
never (a client that sent none is sent with none); a JSON reply relayed as bytes keeps the
content type the provider gave it, parameters and all."""

from __future__ import annotations

import json

import aiohttp
import pytest
from aiohttp import web

from skillstate.bench.history import TOOLS
from skillstate.bench.mock_provider import _COMPLETION
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.loopback import on_loopback

BODIES = {
    "/v1/chat/completions": b'{"model":"m","messages":[{"role":"user","content":"hi"}]}',
    "/v1/messages": b'{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}',
    "/v1/responses": b'{"model":"m","input":"hi"}',
}
AGENT = "some-agent/1.2 (tests)"


async def _post(url: str, body: bytes, agent: str | None, mode: str) -> int:
    headers = {"content-type": "application/json", "x-skillstate-mode": mode}
    skip: tuple[str, ...] = ()
    if agent is None:
        skip = ("User-Agent",)  # aiohttp's client would send its own
    else:
        headers["user-agent"] = agent
    async with (
        aiohttp.ClientSession(skip_auto_headers=skip) as session,
        session.post(url, data=body, headers=headers) as reply,
    ):
        await reply.read()
        return reply.status


@pytest.mark.parametrize("path", list(BODIES))
@pytest.mark.parametrize("wire", ["auto", "openai-chat"])
@pytest.mark.parametrize("mode", ["off", "hybrid", "paper"])
async def test_the_provider_sees_the_clients_agent_and_never_aiohttps(
    path: str, wire: str, mode: str
) -> None:
    async with ScriptedUpstream() as up, gateway_for(up.url, wire=wire) as gw:
        assert await _post(gw.url + path, BODIES[path], AGENT, mode) == 200
        assert up.requests[-1].headers["user-agent"] == AGENT
        assert await _post(gw.url + path, BODIES[path], None, mode) == 200
        assert "user-agent" not in up.requests[-1].headers


def _provider(content_type: str) -> web.Application:
    """A provider whose Chat replies come under ``content_type``."""

    async def completion(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=_COMPLETION, headers={"Content-Type": content_type})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completion)
    return app


@pytest.mark.parametrize("given", ["application/json; charset=utf-8", "application/json"])
@pytest.mark.parametrize("mode", ["off", "hybrid"])
@pytest.mark.parametrize("tools", [False, True], ids=["express", "lanes-read"])
async def test_a_relayed_json_reply_keeps_the_providers_content_type(
    given: str, mode: str, tools: bool
) -> None:
    """Relayed undecoded (the express path) and relayed after the lanes read it (hybrid's
    state lane reads a request that offers tools; ``relay.pass_through``)."""
    async with on_loopback(_provider(given)) as url, gateway_for(url) as gw:
        headers = {"content-type": "application/json", "x-skillstate-mode": mode}
        body = BODIES["/v1/chat/completions"]
        if tools:
            body = body[:-1] + b',"tools":' + json.dumps(TOOLS).encode() + b"}"
        async with (
            aiohttp.ClientSession() as session,
            session.post(gw.url + "/v1/chat/completions", data=body, headers=headers) as reply,
        ):
            assert reply.status == 200
            assert reply.headers["content-type"] == given
            assert await reply.read() == _COMPLETION
