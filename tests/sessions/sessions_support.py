"""Shared by the long-session tests: the real hosts' request shapes (from the recorded
fixtures) and one driver that plays a hybrid session through an in-process gateway."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from skillstate.testing import RecordedRequest, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.session_clients import (
    Agent,
    MessagesAgent,
    ResponsesAgent,
    SessionLog,
    run_session,
)
from skillstate.testing.session_model import CodingModel
from skillstate.testing.session_tools import CLAUDE, CODEX, Dialect
from skillstate.testing.sessions import SessionPlan, Workspace

RECORDED = Path(__file__).parents[1] / "fixtures" / "recorded"
#: Headers of a recorded request that belong to the connection, not to the client's request.
_TRANSPORT = {"host", "content-length", "connection", "accept-encoding"}


def recorded(name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """A recorded request body and its headers (less the transport's), by file stem."""
    body = json.loads((RECORDED / f"{name}.json").read_bytes())
    meta = json.loads((RECORDED / f"{name}.headers.json").read_bytes())
    headers = {k: v for k, v in meta["headers"].items() if k.lower() not in _TRANSPORT}
    return body, headers


@dataclass(frozen=True, slots=True)
class Host:
    """One agent host's shape: its dialect and call-id prefix, and how to build its agent."""

    name: str
    dialect: Dialect
    prefix: str

    def agent(
        self,
        http: aiohttp.ClientSession,
        url: str,
        plan: SessionPlan,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Agent:
        if self.name == "codex":
            body, headers = recorded("openai-responses/codex-first")
            head = body["input"][:-1]  # developer prompt, skills, environment context
            headers.update(extra_headers or {})
            return ResponsesAgent(http, url, body, head, plan.task, headers)
        body, headers = recorded("anthropic-messages/claude-code-first")
        first, *rest = body["messages"]
        head = [{"role": "user", "content": first["content"][:-1]}, *rest]
        headers.update(extra_headers or {})
        return MessagesAgent(http, url, body, head, plan.task, headers)


CODEX_HOST = Host("codex", CODEX, "call")
CLAUDE_HOST = Host("claude", CLAUDE, "toolu")


@dataclass(slots=True)
class HybridRun:
    """A finished session: what went upstream, what the client saw, where each turn's first
    upstream request is (``starts[turn]``), and the gateway's account of the session."""

    plan: SessionPlan
    model: CodingModel
    requests: list[RecordedRequest]
    log: SessionLog
    starts: dict[int, int] = field(default_factory=dict)
    described: dict[str, Any] | None = None
    errors: list[Exception] = field(default_factory=list)

    def turn_request(self, turn: int) -> RecordedRequest:
        return self.requests[self.starts[turn]]


async def play_session(
    host: Host,
    plan: SessionPlan,
    *,
    seed: int,
    keep: tuple[int, ...] = (),
    turns: int | None = None,
    settings: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> HybridRun:
    """Play ``plan`` (to ``turns``) through a gateway in front of the scripted
    ``CodingModel``: in its default mode (hybrid) unless ``settings`` or ``headers`` say
    otherwise."""
    model = CodingModel(plan, host.dialect, prefix=host.prefix)
    async with (
        ScriptedUpstream(model) as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as http,
    ):
        agent = host.agent(http, gw.url, plan, headers)
        run = HybridRun(plan, model, up.requests, SessionLog())
        await run_session(
            agent,
            plan,
            host.dialect,
            Workspace(plan, seed),
            keep=keep,
            turns=turns,
            log=run.log,
            on_turn=lambda turn: run.starts.__setitem__(turn, len(up.requests)),
        )
        assert gw.context.engine is not None and agent.endpoint.session is not None
        described = await gw.context.engine.describe(agent.endpoint.session)
        run.described = dict(described) if described is not None else None
        run.errors = list(up.errors)
    return run
