"""A reply from an Anthropic upstream, which gives no creation time, reaches a Chat or
Responses client dated with the time the gateway received the request (JSON and streams, with
the state lane on and off)."""

from __future__ import annotations

import json
import time

import aiohttp
import pytest

from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for

BODIES = {
    "/v1/chat/completions": {
        "model": "test-model",
        "messages": [{"role": "user", "content": "hi"}],
    },
    "/v1/responses": {"model": "test-model", "input": "hi"},
}


def _dates(path: str, raw: bytes, stream: bool) -> list[int]:
    key = "created" if path == "/v1/chat/completions" else "created_at"
    if not stream:
        return [json.loads(raw)[key]]
    found: list[int] = []
    for line in raw.decode().splitlines():
        if not line.startswith("data: {"):
            continue
        data = json.loads(line[len("data: ") :])
        holder = data.get("response", data) if key == "created_at" else data
        if isinstance(holder, dict) and key in holder:
            found.append(holder[key])
    return found


@pytest.mark.parametrize("mode", ["off", "hybrid"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("path", sorted(BODIES))
async def test_a_reply_from_anthropic_carries_the_current_time(
    path: str, stream: bool, mode: str
) -> None:
    body = {**BODIES[path], "stream": stream}
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, wire="anthropic-messages", settings={"mode": mode}) as gw,
        aiohttp.ClientSession() as session,
    ):
        before = int(time.time())
        async with session.post(gw.url + path, json=body) as reply:
            raw = await reply.read()
            assert reply.status == 200, raw
        after = int(time.time())
    assert up.requests[-1].path == "/v1/messages"
    dates = _dates(path, raw, stream)
    assert dates, raw
    assert all(before <= date <= after for date in dates), (dates, before, after)
