"""Codex's namespace and hosted tools on an upstream of another wire: namespaces flattened and
given back, hosted tools left out and named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from skillstate.testing import Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script

CODEX = (
    Path(__file__).parents[1] / "fixtures" / "recorded" / "openai-responses" / "codex-first.json"
)


def _codex_body(stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(CODEX.read_text())
    body["stream"] = stream
    return body


def _function_calls(raw: bytes, stream: bool) -> list[dict[str, Any]]:
    if not stream:
        return [i for i in json.loads(raw)["output"] if i["type"] == "function_call"]
    items = []
    for line in raw.decode().splitlines():
        if line.startswith("data: "):
            event = json.loads(line[6:])
            if event.get("type") == "response.output_item.done":
                items.append(event["item"])
    return [i for i in items if i["type"] == "function_call"]


@pytest.mark.parametrize("wire", ["anthropic-messages", "openai-chat"])
@pytest.mark.parametrize("stream", [False, True])
async def test_codex_tools_on_another_wire(wire: str, stream: bool) -> None:
    reply = Reply(calls=[ScriptedCall("multi_agent_v1__spawn_agent", {"task": "x"})])
    async with (
        ScriptedUpstream(Script([reply])) as up,
        gateway_for(up.url, wire=wire) as gw,
        aiohttp.ClientSession() as session,
        session.post(gw.url + "/v1/responses", json=_codex_body(stream)) as r,
    ):
        raw = await r.read()
        assert r.status == 200, raw
        assert r.headers["x-skillstate-dropped-tools"] == "web_search"
        sent = json.dumps(up.requests[-1].json)
    assert '"multi_agent_v1__spawn_agent"' in sent and '"exec_command"' in sent
    assert "web_search" not in sent
    calls = _function_calls(raw, stream)
    assert [(c["namespace"], c["name"]) for c in calls] == [("multi_agent_v1", "spawn_agent")]


async def test_namespaced_calls_in_history_are_qualified_for_the_upstream() -> None:
    body = _codex_body(False)
    call = {
        "type": "function_call",
        "call_id": "call_ns1",
        "name": "wait_agent",
        "namespace": "multi_agent_v1",
        "arguments": "{}",
    }
    body["input"] += [call, {"type": "function_call_output", "call_id": "call_ns1", "output": "ok"}]
    async with (
        ScriptedUpstream(Script([Reply(text="done")])) as up,
        gateway_for(up.url, wire="anthropic-messages") as gw,
        aiohttp.ClientSession() as session,
        session.post(gw.url + "/v1/responses", json=body) as r,
    ):
        assert r.status == 200, await r.read()
    uses = [
        block
        for message in up.requests[-1].json["messages"]
        for block in (message["content"] if isinstance(message["content"], list) else [])
        if block.get("type") == "tool_use"
    ]
    assert [u["name"] for u in uses] == ["multi_agent_v1__wait_agent"]
