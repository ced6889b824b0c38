"""The vision lane through the gateway, on every wire, JSON and stream: at an epoch boundary
(here: a collapse asked for), a dense old output of a kept turn goes upstream as page images
and its identifiers, the newest turns stay text, the lanes header says what it saved,
``x-skillstate-vision: off`` leaves the output as text, and ``recall`` by the ref gives the
exact text back."""

from __future__ import annotations

import random
import re
from typing import Any

import aiohttp
import pytest

from skillstate.testing import RecordedRequest, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

ROUTES = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}
IMAGE = {
    "chat": b'{"type":"image_url","image_url":{"url":"data:image/png;base64,',
    "messages": b'{"type":"image","source":{"type":"base64","media_type":"image/png"',
    "responses": b'{"type":"input_image","image_url":"data:image/png;base64,',
}
SETTINGS = {
    "lanes": "compaction,state,vision",
    "collapse": {"min_turns": 2, "keep_recent_turns": 4},
}


def dense(seed: int) -> str:
    """About 16,000 characters of made-up words: three pages, four times their tokens."""
    rng = random.Random(seed)
    letters = "ghijklmnopqrstuvwxyz"

    def word() -> str:
        return "".join(rng.choice(letters) for _ in range(rng.randint(3, 8)))

    lines = [f"{n:04d} " + " ".join(word() for _ in range(16)) for n in range(150)]
    lines[70] += " at src/app/payments.py:88"
    return "\n".join(lines)


OLD, NEWEST = dense(1), dense(2)
NEEDLE = OLD.splitlines()[40]


def step(wire: str, call_id: str, output: str) -> list[dict[str, Any]]:
    if wire == "chat":
        call = {"id": call_id, "type": "function", "function": {"name": "shell", "arguments": "{}"}}
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": output},
        ]
    if wire == "messages":
        use = {"type": "tool_use", "id": call_id, "name": "shell", "input": {}}
        result = {"type": "tool_result", "tool_use_id": call_id, "content": output}
        return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    return [
        {"type": "function_call", "call_id": call_id, "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": call_id, "output": output},
    ]


def body(wire: str, stream: bool) -> dict[str, Any]:
    """Two small steps (collapsed), the dense output, two small steps, a dense newest one."""
    outputs = [("call_0", "value 0"), ("call_1", "value 1"), ("call_old", OLD)]
    outputs += [("call_b", "value b"), ("call_c", "value c"), ("call_new", NEWEST)]
    history = [item for call_id, output in outputs for item in step(wire, call_id, output)]
    task = {"role": "user", "content": "Read the outputs and say what line 40 says."}
    schema = {"type": "object", "properties": {}}
    said: dict[str, Any] = {"model": "gpt-4.1", "stream": stream}
    if wire == "chat":
        tools: Any = [{"type": "function", "function": {"name": "shell", "parameters": schema}}]
        return said | {"messages": [task, *history], "tools": tools}
    if wire == "messages":
        tools = [{"name": "shell", "input_schema": schema}]
        return said | {"max_tokens": 64, "tools": tools, "messages": [task, *history]}
    tools = [{"type": "function", "name": "shell", "parameters": schema}]
    return said | {"input": [task, *history], "tools": tools}


def policy(request: RecordedRequest) -> Reply:
    """Recall the pages' ref, then answer (the collapse's handover round gets a plain reply)."""
    text = request.body.decode()
    if "call_r1" in text:
        return Reply(text="Line 40 is recalled.")
    found = re.search(r"skillstate pages of a text[^\]]*archived as (ar_[0-9a-f]+)", text)
    if found is None:
        return Reply(text="Noted.")
    return Reply(calls=[ScriptedCall("recall", {"ref": found[1]}, id="call_r1")])


async def send(wire: str, stream: bool, extra: dict[str, str]) -> tuple[list[RecordedRequest], str]:
    session = f"vision-{wire}-{stream}-{bool(extra)}"
    headers = {"x-skillstate-session": session, "x-skillstate-mode": "hybrid", **extra}
    async with (
        ScriptedUpstream(policy) as up,
        gateway_for(up.url, settings=SETTINGS) as gw,
        aiohttp.ClientSession() as http,
    ):
        assert gw.context.engine is not None
        await gw.context.engine.request_collapse(session)
        async with http.post(gw.url + ROUTES[wire], json=body(wire, stream), headers=headers) as r:
            assert r.status == 200, await r.text()
            await r.read()
            return up.requests, r.headers.get("x-skillstate-lanes", "")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_a_dense_old_output_goes_as_pages_and_is_recalled_exactly(
    wire: str, stream: bool
) -> None:
    requests, lanes = await send(wire, stream, {})
    first, by_ref = requests[-2:]
    assert NEEDLE.encode() not in first.body  # the old output went as pages
    assert first.body.count(IMAGE[wire]) == 3  # three pages
    assert b"src/app/payments.py:88" in first.body  # its identifiers, as text
    assert NEWEST.splitlines()[40].encode() in first.body  # the newest turn: text
    assert re.search(r"vision=-\d+t", lanes), lanes
    assert NEEDLE.encode() in by_ref.body  # recall by the ref: the exact text


@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_asked_off_the_old_output_goes_as_text(wire: str) -> None:
    requests, lanes = await send(wire, False, {"x-skillstate-vision": "off"})
    assert NEEDLE.encode() in requests[-1].body and IMAGE[wire] not in requests[-1].body
    assert "vision=" not in lanes


async def test_an_unknown_vision_value_is_refused_naming_the_known_ones() -> None:
    async with (
        ScriptedUpstream(policy) as up,
        gateway_for(up.url, settings=SETTINGS) as gw,
        aiohttp.ClientSession() as http,
    ):
        headers = {"x-skillstate-vision": "maybe"}
        async with http.post(
            gw.url + ROUTES["chat"], json=body("chat", False), headers=headers
        ) as r:
            assert r.status == 400
            assert "x-skillstate-vision: 'maybe' is not one of on, off" in await r.text()
