"""Issue 10's bound at the short lengths: on coding-loop, hybrid mode as users get it never
costs more than pass-through, under both pricing models and each of the Messages client's
breakpoint layouts, and still answers every probed fact. Billed by the simulated provider's
cache (``testing.Billing``), independent of the gateway's own estimate."""

from __future__ import annotations

import pytest

from skillstate.bench import run
from skillstate.bench.arms import ARMS, Markers, Pricing
from skillstate.bench.workloads import coding_loop

LAYOUTS = [
    (Pricing.OPENAI, Markers.NONE),
    (Pricing.ANTHROPIC, Markers.NONE),
    (Pricing.ANTHROPIC, Markers.SYSTEM_NEWEST),
    (Pricing.ANTHROPIC, Markers.ALL_FOUR),
]


@pytest.mark.slow
@pytest.mark.parametrize("horizon", [5, 10, 20])
@pytest.mark.parametrize(
    ("pricing", "markers"), LAYOUTS, ids=[f"{p.value}-{m.value}" for p, m in LAYOUTS]
)
async def test_hybrid_costs_at_most_what_pass_through_costs(
    horizon: int, pricing: Pricing, markers: Markers
) -> None:
    workload = coding_loop.build(horizon, 1)
    passthrough = await run.play(workload, ARMS["passthrough"], pricing, markers=markers)
    hybrid = await run.play(workload, ARMS["hybrid"], pricing, markers=markers)
    assert passthrough.completed and hybrid.completed, (passthrough.error, hybrid.error)
    assert hybrid.cost <= passthrough.cost, (hybrid.cost, passthrough.cost)
    assert hybrid.score == 1.0 and hybrid.violations == 0
