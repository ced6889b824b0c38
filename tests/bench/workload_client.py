"""A plain client loop for the workloads' end-to-end tests: the runner's loop in small
(``bench.workload``): before each step the workload's instruction, then one turn; calls are run
with ``Workload.execute``, a text reply is the step's answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import aiohttp

from skillstate.bench.workload import Answer, Call, Variant, Workload
from skillstate.conversation import Json
from skillstate.support import jsonio
from skillstate.testing import RecordedRequest, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.session_checks import messages_of, unpaired
from skillstate.testing.session_clients import Agent, MessagesAgent, ResponsesAgent

#: Collapse early, so a short session already has epochs and an archive to recall from.
EAGER = {"collapse": {"keep_recent_turns": 2, "min_turns": 0, "max_window_tokens": 6000}}


@dataclass(slots=True)
class Played:
    answers: list[Answer] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    errors: list[Exception] = field(default_factory=list)

    def violations(self) -> list[str]:
        return [p for r in self.requests for p in unpaired(messages_of(r))]


def _agent(
    workload: Workload, wire: str, http: aiohttp.ClientSession, url: str, mode: str
) -> Agent:
    headers = {"x-skillstate-session": f"{workload.name}-{mode}", "x-skillstate-mode": mode}
    task = workload.instruction(0) or ""
    if wire == "responses":
        tools: list[Json] = [
            {"type": "function", "name": t.name, "description": t.description,
             "parameters": dict(t.parameters)}
            for t in workload.tools
        ]  # fmt: skip
        template = {"model": "test-model", "tools": tools, "stream": True, "store": False}
        head: list[Json] = [
            {"type": "message", "role": "developer",
             "content": [{"type": "input_text", "text": workload.system}]}
        ]  # fmt: skip
        return ResponsesAgent(http, url, template, head, task, headers)
    anthropic = [
        {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
        for t in workload.tools
    ]
    template = {
        "model": "claude-test",
        "max_tokens": 4096,
        "system": [{"type": "text", "text": workload.system}],
        "tools": anthropic,
        "stream": True,
    }
    return MessagesAgent(http, url, template, [{"role": "user", "content": []}], task, headers)


async def play(
    workload: Workload,
    variant: Variant,
    *,
    mode: str,
    wire: str = "responses",
    settings: dict[str, Any] | None = None,
) -> Played:
    """``settings``: the gateway's (None: in hybrid mode ``EAGER``, else the defaults)."""
    played = Played()
    if settings is None and mode == "hybrid":
        settings = EAGER
    async with (
        ScriptedUpstream(workload.model(variant)) as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as http,
    ):
        agent = _agent(workload, wire, http, gw.url, mode)
        for step in range(workload.horizon):
            text = workload.instruction(step)
            if step > 0 and text:
                agent.add_instruction(text)
            reply = await agent.send()
            if reply.calls:
                calls = [Call(c.id, c.name, jsonio.loads(c.arguments or "{}")) for c in reply.calls]
                agent.add_results([(c.id, workload.execute(c)) for c in calls])
            else:
                played.answers.append(Answer(step, reply.text))
        played.requests = list(up.requests)
        played.errors = list(up.errors)
    return played
