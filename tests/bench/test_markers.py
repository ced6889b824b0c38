"""The Messages client's breakpoint layouts (``--markers``), counted in the bodies the
provider gets through the pass-through gateway; and coding-loop's short horizons end to end."""

from __future__ import annotations

import hashlib
from typing import Any

import aiohttp
import pytest

from skillstate.bench import run
from skillstate.bench.arms import ARMS, Markers, Pricing
from skillstate.bench.workload import Call, Variant, call_id
from skillstate.bench.workloads import coding_loop
from skillstate.support import jsonio
from skillstate.testing.billing import Billing
from skillstate.testing.gateway import gateway_for
from skillstate.testing.upstream import ScriptedUpstream


def _marks(body: dict[str, Any]) -> list[str]:
    """Where ``body``'s breakpoints are: ``tools[i]``, ``system[i]``, ``messages[i][j]``."""
    found = [f"tools[{i}]" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    found += [f"system[{i}]" for i, b in enumerate(body["system"]) if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        content = message["content"]
        for j, block in enumerate(content if isinstance(content, list) else []):
            found += [f"messages[{i}][{j}]"] if "cache_control" in block else []
    return found


async def _provider_bodies(markers: Markers, turns: int) -> list[dict[str, Any]]:
    workload = coding_loop.build(5, 1)
    pricing = Pricing.ANTHROPIC
    arm = ARMS["passthrough"]
    assert arm.gateway is not None
    async with ScriptedUpstream(
        workload.model(Variant.CAREFUL), models=(pricing.model,), billing=Billing("anthropic")
    ) as up:
        settings = dict(arm.gateway)
        async with gateway_for(up.url, wire=pricing.wire.value, settings=settings) as gateway:
            async with aiohttp.ClientSession() as http:
                headers = {"x-skillstate-session": f"markers-{markers}"}
                agent = run._agent(
                    pricing.wire, http, gateway.url, workload, pricing.model, headers, markers
                )
                for _ in range(turns):
                    reply = await agent.send()
                    results = [
                        (c.id, workload.execute(run._call(c.id, c.name, c.arguments)))
                        for c in reply.calls
                    ]
                    agent.add_results(results)
        return [jsonio.loads(r.body) for r in up.requests if r.wire is not None]


@pytest.mark.parametrize(
    ("markers", "expected"),
    [
        (Markers.NONE, lambda n: []),
        (Markers.SYSTEM_NEWEST, lambda n: ["system[0]", f"messages[{n}][-1]"]),
        (Markers.ALL_FOUR, lambda n: ["tools[2]", "system[0]", "system[1]", f"messages[{n}][-1]"]),
    ],
)
async def test_each_layout_reaches_the_provider_with_its_breakpoints(
    markers: Markers, expected: Any
) -> None:
    bodies = await _provider_bodies(markers, turns=2)
    assert len(bodies) == 2
    for body in bodies:
        newest = len(body["messages"]) - 1
        last = len(body["messages"][newest]["content"]) - 1
        want = [m.replace("[-1]", f"[{last}]") for m in expected(newest)]
        assert _marks(body) == want
        assert "".join(b["text"] for b in body["system"]) == coding_loop.SYSTEM


def test_the_default_layout_is_claude_codes() -> None:
    assert run.play.__kwdefaults__["markers"] is Markers.SYSTEM_NEWEST


def _fingerprint(workload: coding_loop.CodingLoop) -> str:
    hasher = hashlib.sha256()
    for n, step in enumerate(workload.steps):
        hasher.update(repr(step).encode())
        for k, use in enumerate(step.uses):
            hasher.update(workload.execute(Call(call_id(n, k), use.name, use.arguments)).encode())
    hasher.update(repr(sorted(workload.instructions.items())).encode())
    hasher.update(repr(workload.probes).encode())
    return hasher.hexdigest()


def test_the_long_plans_are_those_the_published_figures_used() -> None:
    """Taken from the plan before short horizons were added: the long plans did not move."""
    assert _fingerprint(coding_loop.build(120, 1)) == (
        "ccd49a6ceaffc07a610b535799ba4d6c548e83e54c7db1dc2d25911c6d856def"
    )
    assert _fingerprint(coding_loop.build(12, 1)) == (
        "46c57c3c16bed0765620664ab193fd9a595f25d277c34ff33f418bd61911418e"
    )


def test_a_short_plan_reads_the_facts_early_and_probes_them_last() -> None:
    for horizon in (5, 10):
        workload = coding_loop.build(horizon, 1)
        assert len(workload.steps) == horizon
        [probe] = workload.probes
        assert probe.step == horizon - 1 and len(probe.facts) == 5
        assert {f.step for f in probe.facts} <= set(range(horizon - 1))
    with pytest.raises(ValueError, match="at least 5"):
        coding_loop.build(4, 1)


@pytest.mark.parametrize("horizon", [5, 10])
@pytest.mark.parametrize("arm", ["passthrough", "hybrid"])
async def test_a_short_coding_loop_runs_end_to_end(horizon: int, arm: str) -> None:
    workload = coding_loop.build(horizon, 1)
    record = await run.play(workload, ARMS[arm], Pricing.ANTHROPIC, markers=Markers.ALL_FOUR)
    assert record.completed and record.violations == 0, record.error
    assert record.score == 1.0 and record.key.markers == "all-four"
    assert len(record.requests) == horizon
