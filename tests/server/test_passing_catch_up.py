"""A hybrid session passed through before its first boundary (``state.passing``): the requests
relayed undecoded send the same bytes upstream and tell the client the same as the full path
does; ``/state`` counts their steps; the next request the state lane reads catches up, so that
Σ and the step then are what they are where the lane read every request. Each wire, JSON and
stream; the full path is forced in the reference run by a lane that may act in hybrid mode
(``effort``), which changes nothing for this model."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from skillstate.conversation import Json, Wire
from skillstate.support import jsonio
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

PATHS = {
    Wire.CHAT: "/v1/chat/completions",
    Wire.RESPONSES: "/v1/responses",
    Wire.MESSAGES: "/v1/messages",
}
READ_SCHEMA = {"type": "object", "properties": {"file_path": {"type": "string"}}}
TOOLS: dict[Wire, list[Json]] = {
    Wire.CHAT: [{"type": "function", "function": {"name": "Read", "parameters": READ_SCHEMA}}],
    Wire.RESPONSES: [{"type": "function", "name": "Read", "parameters": READ_SCHEMA}],
    Wire.MESSAGES: [{"name": "Read", "input_schema": READ_SCHEMA}],
}
SESSION = {"x-skillstate-session": "passing"}
RELAYED_REQUESTS = 5
"""Requests 2 to 5 (at most 9 messages and a system prompt) cannot reach a boundary
(``min_turns`` 12); the sixth (11 messages) may."""


def _read(wire: Wire, n: int) -> list[Json]:
    """The messages (or items) of one ``Read`` call of file ``n`` and its result."""
    call, args, result = f"call_{n}", {"file_path": f"src/mod{n}.py"}, f"def f{n}(): pass"
    if wire is Wire.CHAT:
        function = {"name": "Read", "arguments": jsonio.dumps_str(args)}
        return [
            {
                "role": "assistant",
                "tool_calls": [{"id": call, "type": "function", "function": function}],
            },
            {"role": "tool", "tool_call_id": call, "content": result},
        ]
    if wire is Wire.MESSAGES:
        use = {"type": "tool_use", "id": call, "name": "Read", "input": args}
        done = {"type": "tool_result", "tool_use_id": call, "content": result}
        return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [done]}]
    arguments = jsonio.dumps_str(args)
    return [
        {"type": "function_call", "call_id": call, "name": "Read", "arguments": arguments},
        {"type": "function_call_output", "call_id": call, "output": result},
    ]


def _body(wire: Wire, reads: int, stream: bool) -> Json:
    history: list[Json] = [{"role": "user", "content": "read the modules"}]
    for n in range(reads):
        history += _read(wire, n)
    listed = "input" if wire is Wire.RESPONSES else "messages"
    body: Json = {"model": "m", listed: history, "tools": TOOLS[wire], "stream": stream}
    if wire is Wire.MESSAGES:
        body["max_tokens"] = 64
    if wire is Wire.CHAT and stream:  # one that does not ask takes the full path in hybrid
        body["stream_options"] = {"include_usage": True}
    return body


async def _session(
    wire: Wire, stream: bool, settings: dict[str, Any], *, collapse: bool = False
) -> dict[str, Any]:
    """Play the session; what the client was told, what went upstream, ``/state`` after the
    relayed requests and after the one that catches up (short, after a boundary was asked
    for, where ``collapse``)."""
    told: list[tuple[str | None, str | None]] = []
    async with (
        ScriptedUpstream(lambda r: Reply(text="reading")) as up,
        gateway_for(up.url, settings={"mode": "hybrid", **settings}) as gw,
        aiohttp.ClientSession() as http,
    ):

        async def send(reads: int) -> None:
            body = _body(wire, reads, stream)
            async with http.post(gw.url + PATHS[wire], json=body, headers=SESSION) as reply:
                assert reply.status == 200, await reply.text()
                await reply.read()
                told.append(
                    (
                        reply.headers.get("x-skillstate-lanes"),
                        reply.headers.get("x-skillstate-mode"),
                    )
                )

        async def state() -> Json:
            async with http.get(gw.url + "/state", params={"session": "passing"}) as reply:
                shown: Json = await reply.json()
                return shown

        for reads in range(RELAYED_REQUESTS):
            await send(reads)
        before = await state()
        if collapse:
            url = gw.url + "/state/collapse"
            async with http.post(url, params={"session": "passing"}) as asked:
                assert asked.status == 202
        await send(RELAYED_REQUESTS)  # 11 messages: the lane reads it (and collapses, if asked)
        after = await state()
        sent = [r.body for r in up.requests]
    return {"told": told, "sent": sent, "before": before, "after": after}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", list(Wire))
async def test_requests_relayed_before_the_boundary_are_caught_up_on(
    wire: Wire, stream: bool
) -> None:
    relayed = await _session(wire, stream, {})
    full = await _session(wire, stream, {"lanes": {"effort": {"enabled": True}}})
    assert relayed["told"] == full["told"]
    assert relayed["told"][-2][0] == f"state=hybrid:step{RELAYED_REQUESTS}"
    assert relayed["sent"] == full["sent"]
    assert relayed["before"]["relayed"] == RELAYED_REQUESTS - 1
    assert full["before"]["relayed"] == 0
    assert relayed["before"]["step"] == full["before"]["step"] == RELAYED_REQUESTS
    for key in ("state", "step", "relayed"):
        assert relayed["after"][key] == full["after"][key], key
    files = relayed["after"]["state"].get("files", {})
    assert sorted(files) == [f"src/mod{n}.py" for n in range(RELAYED_REQUESTS)]


@pytest.mark.parametrize("wire", list(Wire))
async def test_a_boundary_after_relayed_requests_shows_what_their_tool_calls_seeded(
    wire: Wire,
) -> None:
    """Σ as the boundary renders it upstream holds the files the relayed requests read."""
    relayed = await _session(wire, False, {}, collapse=True)
    full = await _session(wire, False, {"lanes": {"effort": {"enabled": True}}}, collapse=True)
    boundary = relayed["sent"][RELAYED_REQUESTS:]
    assert boundary == full["sent"][RELAYED_REQUESTS:]
    assert any(b"src/mod3.py" in sent and b"Session state" in sent for sent in boundary)
    assert relayed["after"]["relayed"] == 0
    assert relayed["after"]["epoch"] is not None
