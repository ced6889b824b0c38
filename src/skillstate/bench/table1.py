"""The SKILL.state paper's Table 1, side by side: its four baselines on its warehouse, our runs
beside its published figures (``skillstate bench table1``; docs/BENCHMARKS.md).

The arms (``bench.arms``): ReAct is ``passthrough``, Memory is ``memory`` (the model's notes
and its 3 most recent turns), Stateful is ``stateful`` (the notes and the whole history),
SKILL.state is ``paper``; the workload is ``warehouse-paper`` (the paper's layout). Per horizon
and arm, over the seeds: the average prompt characters per call (the paper's "average prompt
size"), input and total tokens (the paper's column is total: input and output), the accuracy,
and how many times fewer input tokens than ReAct. The paper's figures come from
../shared/BENCH.md ("The paper's Table 1"); the paper ran Gemini-3-Flash, we run the scripted
model, whose accuracy measures only whether the facts reached it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import mean

from skillstate.bench.record import RunRecord

WORKLOAD = "warehouse-paper"
HORIZONS = (10, 50, 100, 200)
SEEDS = (1, 2, 3, 4, 5)
ARMS = ("passthrough", "memory", "stateful", "paper")
"""Our arms, in the paper's column order."""
NAMES = {
    "passthrough": "ReAct (passthrough)",
    "memory": "Memory (notes + 3 recent)",
    "stateful": "Stateful (notes + history)",
    "paper": "SKILL.state (paper mode)",
}
PAPER_TOKENS: Mapping[int, Mapping[str, int]] = {
    10: {"passthrough": 9_438, "paper": 5_870},
    50: {"passthrough": 171_658, "memory": 131_455, "stateful": 170_992, "paper": 30_151},
    100: {"passthrough": 1_245_413, "memory": 1_082_154, "stateful": 1_062_387, "paper": 65_408},
    200: {
        "passthrough": 2_608_755,
        "memory": 6_175_509,
        "stateful": 5_041_164,
        "paper": 122_384,
    },
}
"""The paper's total tokens per run (Gemini-3-Flash, 5 seeds); its T=10 row gives only two."""
PAPER_ACCURACY_200 = {"passthrough": 0.74, "memory": 0.84, "stateful": 0.88, "paper": 0.94}
PAPER_PROMPT_CHARS = "1,736-1,905"
"""SKILL.state's average prompt per call in the paper, at every horizon."""
TARGET_RATIO = 16.0
"""The issue's target: paper mode's input tokens at least this many times fewer than
pass-through's at T=200, at an equal or better score."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One arm at one horizon, over its seeds."""

    horizon: int
    arm: str
    seeds: int
    prompt_chars: float
    input_tokens: float
    total_tokens: float
    total_low: int
    total_high: int
    accuracy: float
    fewer: float | None
    """How many times fewer input tokens than ReAct at this horizon (None: no ReAct run)."""
    fewer_low: float | None = None
    fewer_high: float | None = None


def cells(runs: Sequence[RunRecord]) -> list[Cell]:
    """Our cells, in horizon then arm order, from the runs of ``WORKLOAD`` (other runs are
    left out; a seed whose ReAct run is missing gives no ratio)."""
    ours = [r for r in runs if r.key.workload == WORKLOAD]
    found = []
    for horizon in sorted({r.key.horizon for r in ours}):
        at = [r for r in ours if r.key.horizon == horizon]
        react = {r.key.seed: _input(r) for r in at if r.arm == "passthrough"}
        for arm in ARMS:
            mine = [r for r in at if r.arm == arm]
            if not mine:
                continue
            totals = [_input(r) + sum(q.output_tokens for q in r.requests) for r in mine]
            ratios = [react[r.key.seed] / _input(r) for r in mine if r.key.seed in react]
            found.append(
                Cell(
                    horizon=horizon,
                    arm=arm,
                    seeds=len(mine),
                    prompt_chars=mean(_chars(r) for r in mine),
                    input_tokens=mean(_input(r) for r in mine),
                    total_tokens=mean(totals),
                    total_low=min(totals),
                    total_high=max(totals),
                    accuracy=mean(r.score for r in mine),
                    fewer=mean(ratios) if ratios else None,
                    fewer_low=min(ratios) if ratios else None,
                    fewer_high=max(ratios) if ratios else None,
                )
            )
    return found


def _input(run: RunRecord) -> int:
    return sum(q.input_tokens for q in run.requests)


def _chars(run: RunRecord) -> float:
    return mean(q.prompt_chars for q in run.requests) if run.requests else 0.0


def markdown(found: Sequence[Cell], noise: int = 0) -> str:
    """The side-by-side table, then the target's verdict; ``noise``: the telemetry lines per
    step the runs had."""
    lines = [
        f"Noise: {noise} telemetry lines per step.",
        "",
        "| T | arm | prompt chars / call | input tokens | total tokens (seeds min-max) "
        "| accuracy | x fewer input than ReAct (min-max) | paper: total tokens | paper: x fewer |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cell in found:
        paper = PAPER_TOKENS.get(cell.horizon, {})
        theirs = paper.get(cell.arm)
        react = paper.get("passthrough")
        their_ratio = (
            f"{react / theirs:.1f}" if theirs and react and cell.arm != "passthrough" else ""
        )
        fewer = ""
        if cell.fewer is not None and cell.arm != "passthrough":
            fewer = f"{cell.fewer:.1f} ({cell.fewer_low:.1f}-{cell.fewer_high:.1f})"
        lines.append(
            f"| {cell.horizon} | {NAMES[cell.arm]} | {cell.prompt_chars:,.0f} "
            f"| {cell.input_tokens:,.0f} | {cell.total_tokens:,.0f} "
            f"({cell.total_low:,}-{cell.total_high:,}) | {cell.accuracy:.2f} | {fewer} "
            f"| {f'{theirs:,}' if theirs else ''} | {their_ratio} |"
        )
    lines += ["", verdict(found)]
    return "\n".join(lines) + "\n"


def verdict(found: Sequence[Cell]) -> str:
    """Whether paper mode met the target at the largest horizon run, and whether its prompt
    stayed flat (the largest horizon within 1.2x of the smallest)."""
    papers = sorted((c for c in found if c.arm == "paper"), key=lambda c: c.horizon)
    react = {c.horizon: c for c in found if c.arm == "passthrough"}
    if not papers:
        return "No paper-mode run: no verdict."
    last, first = papers[-1], papers[0]
    flat = last.prompt_chars / first.prompt_chars if first.prompt_chars else float("inf")
    said = [
        f"Paper mode's prompt: {first.prompt_chars:,.0f} characters per call at T={first.horizon}, "
        f"{last.prompt_chars:,.0f} at T={last.horizon} ({flat:.2f}x; flat means within 1.2x)."
    ]
    base = react.get(last.horizon)
    if last.fewer is not None and base is not None:
        met = last.fewer >= TARGET_RATIO and last.accuracy >= base.accuracy
        said.append(
            f"At T={last.horizon} it sends {last.fewer:.1f}x fewer input tokens than pass-through "
            f"at accuracy {last.accuracy:.2f} (pass-through {base.accuracy:.2f}): the "
            f"{TARGET_RATIO:.0f}x target is {'met' if met else 'not met'}."
        )
    return " ".join(said)


def plot(found: Sequence[Cell], path: Path) -> str | None:
    """Total tokens against T, ours (solid) and the paper's (dashed), log scale, as a PNG at
    ``path``; the reason when it cannot be drawn (no matplotlib), else None."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        return "not drawn: matplotlib is not installed (pip install 'skillstate[bench]')"
    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    for n, arm in enumerate(ARMS):
        color = f"C{n}"
        mine = [c for c in found if c.arm == arm]
        if mine:
            xs = [c.horizon for c in mine]
            axes.plot(xs, [c.total_tokens for c in mine], "o-", color=color, label=NAMES[arm])
        theirs = sorted((t, row[arm]) for t, row in PAPER_TOKENS.items() if arm in row)
        axes.plot(*zip(*theirs, strict=True), "x--", color=color, alpha=0.6)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("horizon T (steps)")
    axes.set_ylabel("total tokens per run")
    axes.set_title("Warehouse: ours (solid, scripted model) vs the paper (dashed)")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
    return None
