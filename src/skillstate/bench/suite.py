"""A whole benchmark invocation: every workload at its horizons, on every arm, for every seed
and pricing, one run after another (runs share nothing, so their order changes no figure)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from skillstate.bench.arms import Arm, Markers, Pricing
from skillstate.bench.record import RunRecord
from skillstate.bench.run import Progress, play
from skillstate.bench.workload import Variant
from skillstate.bench.workloads import Entry
from skillstate.conversation import Wire


@dataclass(frozen=True, slots=True)
class Job:
    """One run to make."""

    workload: Entry
    horizon: int
    seed: int
    pricing: Pricing
    arm: Arm

    def describe(self) -> str:
        return (
            f"{self.arm.name} · {self.workload.name} T={self.horizon} · "
            f"{self.pricing.value} · seed {self.seed}"
        )


@dataclass(frozen=True, slots=True)
class Plan:
    """What to run: ``workloads`` each with its horizons (empty: its default one)."""

    workloads: Sequence[tuple[Entry, Sequence[int]]]
    arms: Sequence[Arm]
    seeds: Sequence[int] = (1,)
    pricings: Sequence[Pricing] = (Pricing.OPENAI, Pricing.ANTHROPIC)
    wire: Wire | None = None
    variant: Variant = Variant.CAREFUL
    markers: Markers = Markers.SYSTEM_NEWEST

    def jobs(self) -> list[Job]:
        """Every run, grouped so the arms of one comparison run back to back."""
        return [
            Job(entry, horizon, seed, pricing, arm)
            for entry, horizons in self.workloads
            for horizon in (horizons or [entry.default_horizon])
            for pricing in self.pricings
            for seed in self.seeds
            for arm in self.arms
        ]


async def run_plan(
    plan: Plan,
    *,
    started: Callable[[Job], None] | None = None,
    progress: Progress | None = None,
) -> list[RunRecord]:
    """Play every job of ``plan``; ``started(job)`` before each, ``progress`` per turn."""
    runs = []
    for job in plan.jobs():
        if started is not None:
            started(job)
        workload = job.workload.build(job.horizon, job.seed)
        runs.append(
            await play(
                workload,
                job.arm,
                job.pricing,
                wire=plan.wire,
                variant=plan.variant,
                markers=plan.markers,
                progress=progress,
            )
        )
    return runs
