"""Paper mode that caches (issue 10, build item 4), end to end through the gateway.

A Claude Code-like loop (system blocks with ``cache_control``, a marker on the newest message)
runs ten paper-mode steps against an upstream that bills with Anthropic's explicit prompt cache
(``skillstate.testing.Billing``). Every request carries the same procedure P with its own
breakpoint, so from the second request on P is read from the cache; Σ and the observation
after it are billed as plain input, never as cache writes that no later request could read.

A tool-less conversation in paper mode gets the model's ``action`` as its answer: the envelope
stays between the gateway and the model."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from skillstate.support import jsonio
from skillstate.testing import Billing, Prices, Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.session_clients import MessagesAgent
from skillstate.testing.session_model import PaperModel

STEPS = 10
SESSION = "paper-cache"
MODEL = "claude-sonnet-test"
PRICES = Prices.anthropic(input=3.0, output=15.0)
#: A procedure of some 2,400 tokens: above Anthropic's 1,024-token minimum for a cache entry.
SYSTEM = "You migrate a database one step at a time, checking each step's output. " * 160
TOOLS = [
    {
        "name": "run_step",
        "description": "Run one step of the migration.",
        "input_schema": {
            "type": "object",
            "properties": {"action": {"type": "string"}, "path": {"type": "string"}},
            "required": ["action", "path"],
        },
    }
]
#: Measured on main before this change: every request a cache write, none read.
BEFORE_COST_USD = 0.1335


def _result(n: int) -> str:
    return "\n".join(f"migrated row {n}.{i}: ok" for i in range(60))


async def test_paper_mode_reads_its_procedure_from_the_cache() -> None:
    model = PaperModel(STEPS)
    headers = {"x-skillstate-mode": "paper", "x-skillstate-session": SESSION}
    template: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 1024,
        "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
        "tools": TOOLS,
    }
    billing = Billing("anthropic")
    async with (
        ScriptedUpstream(model, billing=billing) as up,
        gateway_for(up.url, settings={"schema": "step,counter,findings"}) as gw,
        aiohttp.ClientSession() as http,
    ):
        agent = MessagesAgent(
            http, gw.url, template, [{"role": "user", "content": []}], "Go.", headers
        )
        for _ in range(STEPS):
            reply = await agent.send()
            agent.add_results([(c.id, _result(i)) for i, c in enumerate(reply.calls)])

    assert up.errors == [] and model.problems == []
    charges = [c.tokens for c in billing.billed]
    assert len(charges) == STEPS
    total = billing.bill()
    print("PAPERCACHE", total, total.cost(PRICES))
    assert all(t.cached > 0 for t in charges[1:]), [t.cached for t in charges]
    assert total.cost(PRICES) < BEFORE_COST_USD


def _answering(recorded: RecordedRequest) -> Reply:
    """The model answers every step with an envelope: a finding for Σ, the answer as action."""
    n = recorded.index + 1
    envelope = {"state_patch": {"findings": {f"q{n}": f"asked {n}"}}, "action": f"Answer {n}."}
    return Reply(text=jsonio.dumps_str(envelope))


@pytest.mark.parametrize("stream", [False, True])
async def test_a_tool_less_conversation_gets_the_action_as_its_answer(stream: bool) -> None:
    headers = {"x-skillstate-mode": "paper", "x-skillstate-session": f"tool-less-{stream}"}
    template: dict[str, Any] = {"model": MODEL, "max_tokens": 256, "system": "You answer."}
    if stream:
        template["stream"] = True
    async with (
        ScriptedUpstream(_answering) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
    ):
        agent = MessagesAgent(http, gw.url, template, [{"role": "user", "content": []}], "Q1?")
        agent.endpoint.headers = headers
        first = await agent.send()
        agent.add_instruction("Q2?")
        second = await agent.send()

    assert up.errors == []
    assert (first.text, second.text) == ("Answer 1.", "Answer 2.")
    assert agent.messages[1]["content"] == [{"type": "text", "text": "Answer 1."}]
    assert '\\"q1\\":\\"asked 1\\"' in up.requests[1].body.decode()  # the patch was applied


async def test_a_conversation_with_tools_gets_the_action_too() -> None:
    headers = {"x-skillstate-mode": "paper", "x-skillstate-session": "with-tools"}
    body = {
        "model": MODEL,
        "max_tokens": 256,
        "tools": TOOLS,
        "messages": [{"role": "user", "content": "Q1?"}],
    }
    async with (
        ScriptedUpstream(_answering) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
    ):
        async with http.post(gw.url + "/v1/messages", json=body, headers=headers) as reply:
            got = await reply.json()

    assert up.errors == []
    assert got["content"] == [{"type": "text", "text": "Answer 1."}]
