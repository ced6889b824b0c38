"""A 200-step paper-mode session through the gateway: a custom agent loop on Chat Completions
keeps its whole transcript and sends it every step; the scripted model sees only
A_t = (P, Σ_t, O_t) and advances Σ with one envelope a step.

Σ is the model's only memory here: it reads its step and counter from Σ, so Σ ends at the
expected value only if every patch was applied and every request carried the latest Σ."""

from __future__ import annotations

import aiohttp
import pytest

from skillstate.support import jsonio
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.session_clients import ChatAgent
from skillstate.testing.session_model import PaperModel
from skillstate.testing.session_tools import PLAIN
from skillstate.testing.sessions import Workspace

STEPS = 200
SESSION = "paper-200"
TASK = "Run the 200 steps of the migration, one at a time."
INSTRUCTION = "From step 101 on, also report the counter after each step."
#: A request holds P, Σ (at most 20 findings) and one step's call and result (2 KB): a few KB
#: whatever the step, while the client's transcript passes 400 KB.
MAX_BODY = 6_000
MAX_RATIO = 1.3
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_step",
            "description": "Run one step of the migration.",
            "parameters": {
                "type": "object",
                "properties": {"action": {"type": "string"}, "path": {"type": "string"}},
                "required": ["action", "path"],
            },
        },
    }
]


@pytest.mark.slow
async def test_a_200_step_paper_session_keeps_every_request_the_same_size() -> None:
    model = PaperModel(STEPS)
    workspace = Workspace(None, seed=0)
    headers = {"x-skillstate-mode": "paper", "x-skillstate-session": SESSION}
    settings = {"schema": "step,counter,findings"}
    async with (
        ScriptedUpstream(model) as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as http,
    ):
        template = {"model": "test-model", "tools": TOOLS}
        agent = ChatAgent(http, gw.url, template, "You migrate a database.", TASK, headers)
        for step in range(1, STEPS + 2):
            if step == 101:
                agent.add_instruction(INSTRUCTION)
            reply = await agent.send()
            results = [(c.id, PLAIN.run(workspace, c.name, c.arguments)) for c in reply.calls]
            agent.add_results(results)
        transcript = len(agent.body()["messages"])
        client_bytes = len(jsonio.dumps(agent.body()))
        assert gw.context.engine is not None
        described = await gw.context.engine.describe(SESSION)

    assert up.errors == [] and model.problems == []
    assert len(up.requests) == STEPS + 1, "an envelope was retried"
    assert reply.calls == () and reply.text == "finish"  # the envelope's action, not the envelope
    assert transcript == 2 + 2 * STEPS + 1 + 1  # system, task, 200 steps, the instruction, end

    sizes = [len(r.body) for r in up.requests[1:]]  # the first has no observation yet
    assert max(sizes) <= MAX_BODY, sizes.index(max(sizes))
    assert max(sizes) / min(sizes) <= MAX_RATIO
    assert max(sizes) * 40 < client_bytes

    assert described is not None
    assert described["state"] == {
        "step": STEPS,
        "counter": sum(range(1, STEPS + 1)),
        "findings": {f"f{n:03d}": f"finding of step {n}" for n in range(10, STEPS + 1, 10)},
    }
    assert model.tasks[0] is None  # the first observation is the task itself
    assert set(model.tasks[1:100]) == {TASK}  # requests 2 to 100
    assert set(model.tasks[100:]) == {INSTRUCTION}  # from request 101 on
