"""A client that uses all four of Anthropic's cache breakpoints (the last tool, two system
blocks, the newest message) keeps its prompt cache through hybrid mode: after the first epoch
the gateway's own breakpoint on Σ must not push the client's newest-message marker out, or
every turn since Σ is billed uncached on every request. Billed by the scripted upstream's
simulated Anthropic cache (``skillstate.testing.Billing``), independent of the gateway."""

from __future__ import annotations

from typing import Any

import aiohttp

from skillstate.testing import Billing, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.recording import RecordedRequest

TURNS = 30
SIGMA = "Session state Σ".encode()
"""Where the Σ message begins (JSON keeps it unescaped)."""
EPHEMERAL = {"type": "ephemeral"}
SYSTEM = "You are a careful coding agent working in a Python repository. " * 40
RULES = "Run the tests after every edit and keep each change small. " * 20
TOOLS = [
    {
        "name": name,
        "description": f"{name} a file of the project.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    }
    for name in ("read_file", "list_dir")
]


def _file(n: int) -> str:
    return "\n".join(
        f"def handler_{n}_{i}(value):\n    return value * {i} + {n}" for i in range(80)
    )


def _policy(request: RecordedRequest) -> Reply:
    seen = request.body.count(b"def handler_") // 80
    if seen >= TURNS:
        return Reply(text="All files read; the handlers are linear.", output_tokens=20)
    call = ScriptedCall("read_file", {"path": f"src/mod{seen}.py"}, id=f"call_{seen}")
    return Reply(calls=[call], output_tokens=30)


def _body(turn: int) -> dict[str, Any]:
    """Four client markers: the last tool, both system blocks, the newest message."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "Read every module."}]}
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
    messages[-1]["content"][-1]["cache_control"] = dict(EPHEMERAL)
    tools = [dict(tool) for tool in TOOLS]
    tools[-1]["cache_control"] = dict(EPHEMERAL)
    return {
        "model": "test-model",
        "max_tokens": 500,
        "system": [
            {"type": "text", "text": SYSTEM, "cache_control": dict(EPHEMERAL)},
            {"type": "text", "text": RULES, "cache_control": dict(EPHEMERAL)},
        ],
        "messages": messages,
        "tools": tools,
    }


async def _read_share_after_the_first_epoch() -> tuple[float, int]:
    """The cache read share of the requests after the first one with a Σ message, and how
    many there were."""
    billing = Billing("anthropic")
    async with (
        ScriptedUpstream(_policy, billing=billing) as up,
        gateway_for(up.url, settings={"mode": "hybrid"}) as gw,
        aiohttp.ClientSession() as session,
    ):
        for turn in range(TURNS + 1):
            headers = {"x-skillstate-session": "four-markers"}
            async with session.post(
                gw.url + "/v1/messages", json=_body(turn), headers=headers
            ) as r:
                assert r.status == 200, await r.text()
                await r.read()
        bodies = {req.index: req.body for req in up.requests}
    epoch = [c for c in billing.billed if SIGMA in bodies[c.request]]
    assert epoch, "no boundary fired: the test does not reach the case it is about"
    later = epoch[1:]  # the first request of an epoch writes; the ones after it should read
    read = sum(c.tokens.cached for c in later)
    total = sum(c.tokens.input for c in later)
    return read / total, len(later)


async def test_four_client_breakpoints_keep_the_cache_after_the_first_epoch() -> None:
    """Before the fix the share was 0.17 (only the prefix up to Σ was read, the turns since it
    never); pass-through reads about 0.95 of each request."""
    share, requests = await _read_share_after_the_first_epoch()
    assert requests >= 3
    assert share >= 0.8, share
