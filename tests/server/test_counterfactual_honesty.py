"""The pass-through estimate is honest: the same scripted coding session, run once with
``--mode off`` (what pass-through actually costs) and once in hybrid mode, against an upstream
that bills with a simulated prompt cache (``skillstate.testing.Billing``, independent of the
gateway's own code), and against one that has no cache at all (issue 26: many
OpenAI-compatible servers report 0 cached tokens on every request). The hybrid gateway's
``passthrough_cost_usd`` lies within 10% of the cost the off run recorded; both runs'
recorded costs are what the upstream billed; and the off run, a pass-through, saves exactly 0
in its totals and every group."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from skillstate.testing import Billing, Prices, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.recording import RecordedRequest

RATES = {"input": 3.0, "cached_input": 0.3, "cache_write_5m": 3.75, "cache_write_1h": 6.0}
PRICES = {"test-model": {**RATES, "output": 15.0}}
BILLED_AT = Prices(input=3.0, output=15.0, cached=0.3, cache_write_5m=3.75, cache_write_1h=6.0)
TURNS = 30
SYSTEM = "You are a careful coding agent working in a Python repository. " * 60
TOOL = {
    "name": "read_file",
    "description": "Read a file of the project and return its text.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Path from the root."}},
        "required": ["path"],
    },
}


def _file(n: int) -> str:
    """A file's text: some code, different for every turn."""
    return "\n".join(
        f"def handler_{n}_{i}(value):\n    return value * {i} + {n}" for i in range(80)
    )


def _policy(request: RecordedRequest) -> Reply:
    """Each turn the model reads the next file, until the last one, where it answers."""
    seen = request.body.count(b"def handler_") // 80
    if seen >= TURNS:
        return Reply(text="All files read; the handlers are linear.", output_tokens=20)
    call = ScriptedCall("read_file", {"path": f"src/mod{seen}.py"}, id=f"call_{seen}")
    return Reply(calls=[call], output_tokens=30)


def _chat_body(turn: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Read every module and tell me what the handlers do."},
    ]
    for n in range(turn):
        call = {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/mod{n}.py"})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": _file(n)})
    return {
        "model": "test-model",
        "messages": messages,
        "tools": [{"type": "function", "function": TOOL}],
    }


def _messages_body(turn: int) -> dict[str, Any]:
    """Claude Code's markers: one on the system prompt, one on the newest message."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Read every module and tell me what the handlers do."}
    ]
    for n in range(turn):
        use = {
            "type": "tool_use",
            "id": f"call_{n}",
            "name": "read_file",
            "input": {"path": f"src/mod{n}.py"},
        }
        messages.append({"role": "assistant", "content": [use]})
        result = {"type": "tool_result", "tool_use_id": f"call_{n}", "content": _file(n)}
        messages.append({"role": "user", "content": [result]})
    newest = messages[-1]["content"]
    if isinstance(newest, str):
        newest = messages[-1]["content"] = [{"type": "text", "text": newest}]
    newest[-1]["cache_control"] = {"type": "ephemeral"}
    return {
        "model": "test-model",
        "max_tokens": 500,
        "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
        "messages": messages,
        "tools": [
            {
                "name": TOOL["name"],
                "description": TOOL["description"],
                "input_schema": TOOL["parameters"],
            }
        ],
    }


WIRES = {
    "chat": ("/v1/chat/completions", _chat_body),
    "messages": ("/v1/messages", _messages_body),
}


async def _run(
    wire: str, mode: str, stream: bool = False, caching: bool = True
) -> tuple[dict[str, Any], float]:
    """The session through a gateway in ``mode``, against a provider with its wire's cache
    or (``caching=False``) none: its /cost document and what the upstream billed for it,
    priced at the same rates."""
    path, body_of = WIRES[wire]
    billing = Billing(caching=caching)
    async with (
        ScriptedUpstream(_policy, billing=billing) as up,
        gateway_for(up.url, settings={"mode": mode, "prices": PRICES}) as gw,
        aiohttp.ClientSession() as session,
    ):
        for turn in range(TURNS + 1):
            headers = {"x-skillstate-session": "honest"}
            body = {**body_of(turn), "stream": stream}
            if stream and wire == "chat":  # off sends the client's bytes: it asks for its usage
                body["stream_options"] = {"include_usage": True}
            async with session.post(gw.url + path, json=body, headers=headers) as reply:
                assert reply.status == 200, await reply.text()
                await reply.read()
        async with session.get(gw.url + "/cost") as reply:
            doc: dict[str, Any] = await reply.json()
    return doc, billing.bill().cost(BILLED_AT)


def _groups(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The totals and every group of a /cost document."""
    keys = ("by_model", "by_session", "by_lane", "hourly")
    return [doc["totals"], *(group for key in keys for group in doc[key])]


@pytest.mark.parametrize("caching", [True, False], ids=["cache", "no-cache"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("wire", list(WIRES))
async def test_the_hybrid_estimate_of_pass_through_is_within_10_percent_of_pass_through(
    wire: str, stream: bool, caching: bool
) -> None:
    off_doc, off_billed = await _run(wire, "off", stream, caching)
    hybrid_doc, hybrid_billed = await _run(wire, "hybrid", stream, caching)
    off, hybrid = off_doc["totals"], hybrid_doc["totals"]
    # What each gateway recorded is what its upstream billed.
    assert off["cost_usd"] == pytest.approx(off_billed, abs=2e-6)
    assert hybrid["cost_usd"] == pytest.approx(hybrid_billed, abs=2e-6)
    # The session did use the provider's cache where there was one, and none where not.
    assert (off["cached_input_tokens"] > 0) is caching
    assert hybrid["input_tokens"] != off["input_tokens"]  # and the state lane did rewrite it
    # The estimate of a pass-through, made by the hybrid gateway, against the real thing.
    estimate = hybrid["passthrough_cost_usd"]
    assert estimate == pytest.approx(off["cost_usd"], rel=0.10), (estimate, off["cost_usd"])
    # Past its first requests, the hybrid gateway says which cache it assumed.
    bases = hybrid["estimate_basis"]
    if caching:
        assert bases["no-cache"] == 0
    else:
        assert bases["no-cache"] > bases["automatic"] + bases["explicit"] + bases["observed"]
    # The off run is a pass-through: its estimate is what it recorded, so it saves exactly 0.
    assert off["estimate_basis"]["recorded"] == off["client_requests"] == TURNS + 1
    for group in _groups(off_doc):
        assert group["passthrough_cost_usd"] == group["cost_usd"] > 0
        assert group["saved_usd"] == 0
