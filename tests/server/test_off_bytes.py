"""Off means off (DESIGN.md, invariant 6; defect 9 of issue 25): in mode ``off``, and for a
request with ``x-skillstate-bypass``, the upstream gets the client's bytes exactly and the
client gets the upstream's bytes exactly, on every wire, JSON and stream. A Chat stream that
did not ask for its usage is not asked for it: the upstream's stream then holds none, and the
ledger counts that request itself, marked estimated."""

from __future__ import annotations

import aiohttp
import pytest

from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script
from skillstate.testing.replies import Reply

ROUTES = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic-messages": "/v1/messages",
}
HOW = {
    "mode-off": {"x-skillstate-mode": "off"},
    "bypass": {"x-skillstate-bypass": "1"},
}


def client_bytes(wire: str, stream: bool) -> bytes:
    """A body written as no encoder writes it (spaces, an odd key order, an escaped
    character, a float with a trailing zero), so anything but the client's own bytes shows.
    A Chat stream does not ask for its usage."""
    task = '"Look up k1 \\u00e9 please."'
    if wire == "openai-chat":
        body = (
            '{ "messages" : [ {"content": TASK, "role": "user"} ],\n'
            '  "temperature": 0.50, "model": "test-model" STREAM}'
        )
    elif wire == "openai-responses":
        body = '{ "input" : TASK , "temperature": 0.50,\n  "model": "test-model" STREAM}'
    else:
        body = (
            '{ "max_tokens": 64, "messages": [ {"role": "user", "content": TASK} ],\n'
            '  "temperature": 0.50, "model": "test-model" STREAM}'
        )
    written = body.replace("TASK", task).replace("STREAM", ', "stream" : true' if stream else "")
    return written.encode()


@pytest.mark.parametrize("how", sorted(HOW))
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_off_forwards_the_clients_bytes_and_relays_the_upstreams(
    wire: str, stream: bool, how: str
) -> None:
    sent = client_bytes(wire, stream)
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    async with (
        ScriptedUpstream(Script([Reply(text="Found: k1 is v1.")])) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
        http.post(gw.url + ROUTES[wire], data=sent, headers=headers | HOW[how]) as reply,
    ):
        got = await reply.read()
        assert reply.status == 200, got
        assert "x-skillstate-mode" not in reply.headers
    (recorded,) = up.requests
    assert recorded.body == sent
    assert got == up.answers[0]
    if wire == "openai-chat" and stream:
        assert b'"usage"' not in got  # not asked for, so none came, and none was made up


async def test_a_chat_stream_relayed_in_mode_off_without_usage_is_an_estimated_row() -> None:
    """The stream held no usage, since the client asked for none: the ledger counts the
    request and the reply itself and says so, never 0 tokens for $0."""
    sent = client_bytes("openai-chat", True)
    headers = {"content-type": "application/json", "x-skillstate-mode": "off"}
    async with (
        ScriptedUpstream(Script([Reply(text="Found: k1 is v1.")])) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
    ):
        async with http.post(gw.url + ROUTES["openai-chat"], data=sent, headers=headers) as r:
            assert r.status == 200 and await r.read() == up.answers[0]
        async with http.get(gw.url + "/cost/requests") as r:
            (row,) = (await r.json())["requests"]
    assert row["estimated"] is True and row["mode"] == "off"
    assert row["input"] > 0 and row["output"] > 0
