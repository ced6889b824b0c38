"""The request path reads a grown body from its new bytes (``splice``) on every wire and mode,
forwards exactly what a whole parse would have given, and answers a grown body that does not
read with the same error in the client's wire as before."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest

from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

ROUTES = {
    "chat": "/v1/chat/completions",
    "messages": "/v1/messages",
    "responses": "/v1/responses",
}


def grown(wire: str, turns: int) -> dict[str, Any]:
    """A tool loop of ``turns`` turns in ``wire``'s own shape, each result a few KB."""
    history: list[dict[str, Any]] = []
    for n in range(turns):
        result = f"line {n} of the file\n" * 120
        if wire == "chat":
            call = {"id": f"c{n}", "type": "function",
                    "function": {"name": "read", "arguments": f'{{"n":{n}}}'}}  # fmt: skip
            history += [
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{n}", "content": result},
            ]
        elif wire == "messages":
            use = {"type": "tool_use", "id": f"c{n}", "name": "read", "input": {"n": n}}
            answer = {"type": "tool_result", "tool_use_id": f"c{n}", "content": result}
            history += [
                {"role": "assistant", "content": [use]},
                {"role": "user", "content": [answer]},
            ]
        else:
            history += [
                {
                    "type": "function_call",
                    "call_id": f"c{n}",
                    "name": "read",
                    "arguments": f'{{"n":{n}}}',
                },
                {"type": "function_call_output", "call_id": f"c{n}", "output": result},
            ]
    task = {"role": "user", "content": "Read the files."}
    if wire == "chat":
        tools = [{"type": "function", "function": {"name": "read", "parameters": {}}}]
        return {"model": "m", "messages": [task, *history], "tools": tools}
    if wire == "messages":
        tools = [{"name": "read", "input_schema": {"type": "object"}}]
        return {"model": "m", "max_tokens": 64, "messages": [task, *history], "tools": tools}
    tools = [{"type": "function", "name": "read", "parameters": {}}]
    return {"model": "m", "input": [task, *history], "tools": tools}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("mode", ["off", "hybrid", "paper"])
@pytest.mark.parametrize("wire", list(ROUTES))
async def test_grown_bodies_are_spliced_and_forwarded_as_parsed_whole(
    wire: str, mode: str, stream: bool
) -> None:
    headers = {"x-skillstate-session": f"splice-{wire}-{mode}", "x-skillstate-mode": mode}
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
    ):
        gw.context.bodies.min_bytes = 0
        for turns in range(1, 7):
            sent = {**grown(wire, turns), "stream": stream}
            raw = orjson.dumps(sent)
            post = http.post(gw.url + ROUTES[wire], data=raw, headers=headers | JSON)
            async with post as reply:
                assert reply.status == 200, await reply.text()
                await reply.read()
            if mode == "off":  # the client's bytes
                assert up.requests[-1].body == raw
        assert gw.context.bodies.spliced == 5
        if mode != "off":  # what the lanes forwarded was decoded from the spliced value
            assert up.requests[-1].json is not None
            assert "line 5 of the file" in up.requests[-1].body.decode()


JSON = {"content-type": "application/json"}


@pytest.mark.parametrize("wire", list(ROUTES))
async def test_a_grown_body_that_does_not_read_gets_the_whole_parse_verdict(wire: str) -> None:
    headers = {"x-skillstate-session": f"bad-{wire}"} | JSON
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
    ):
        gw.context.bodies.min_bytes = 0
        url = gw.url + ROUTES[wire]
        first = orjson.dumps(grown(wire, 3))
        async with http.post(url, data=first, headers=headers) as reply:
            assert reply.status == 200
        broken = orjson.dumps(grown(wire, 4))[:-1]  # the object never closes
        async with http.post(url, data=broken, headers=headers) as reply:
            assert reply.status == 400
            error = await reply.json()
        assert "not valid JSON" in orjson.dumps(error).decode()
        assert ("type" in error) if wire == "messages" else ("error" in error)
        assert len(up.requests) == 1  # nothing of it went upstream
        again = orjson.dumps(grown(wire, 4))
        async with http.post(url, data=again, headers=headers) as reply:
            assert reply.status == 200  # and the session goes on from its last good body
        assert gw.context.bodies.spliced == 1


@pytest.mark.parametrize("mode", ["off", "hybrid"])
@pytest.mark.parametrize("wire", list(ROUTES))
async def test_clients_sending_the_same_long_body_at_once_are_all_answered(
    wire: str, mode: str
) -> None:
    """Long bodies are read taking turns with the event loop: several sessions sending the
    same next body at once each extend the chart of the one before (a benchmark's workers
    did, and all but the first got a 500)."""
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
    ):
        url = gw.url + ROUTES[wire]
        first, following = orjson.dumps(grown(wire, 120)), orjson.dumps(grown(wire, 121))
        assert len(first) > 2 * gw.context.bodies.min_bytes

        async def send(raw: bytes, worker: int) -> int:
            headers = {"x-skillstate-session": f"same-{worker}", "x-skillstate-mode": mode}
            async with http.post(url, data=raw, headers=headers | JSON) as reply:
                await reply.read()
                return reply.status

        assert await send(first, 0) == 200
        statuses = await asyncio.gather(*(send(following, n) for n in range(6)))
        assert statuses == [200] * 6
        assert gw.context.bodies.spliced >= 1
        assert len(up.requests) >= 7  # hybrid adds a handover round where it collapses
