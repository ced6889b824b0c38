"""What a benchmark run leaves in its directory: ``results.jsonl`` (every request and run),
``summary.json`` (one object per workload, arm, horizon and pricing), ``report.md`` (the
tables) and the PNG plots (cumulative cost and prompt size per turn by arm, score by arm).

Plots need matplotlib (the ``bench`` extra); without it the report says so and the rest is
written all the same.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from skillstate.bench.gates import TOLERANCE, Group, Verdict, group_of, judge
from skillstate.bench.record import RunRecord, write_results
from skillstate.support import jsonio


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the summary: an arm of a group, averaged over its seeds."""

    group: Group
    arm: str
    seeds: int
    input_tokens: float
    cached_tokens: float
    cost: float
    score: float
    recall: float
    violations: int
    retries: int
    rejected_patches: int
    archive_bytes: float
    overhead_ms: float | None
    verdict: Verdict

    def as_json(self) -> dict[str, Any]:
        """The ``summary.json`` object (the issue's fields first)."""
        return {
            "workload": self.group.workload,
            "arm": self.arm,
            "horizon": self.group.horizon,
            "pricing": self.group.pricing,
            "input_tokens": round(self.input_tokens),
            "cost": round(self.cost, 6),
            "score": self.score,
            "recall": self.recall,
            "violations": self.violations,
            "claim": self.verdict.text,
            "wire": self.group.wire,
            "markers": self.group.markers,
            "seeds": self.seeds,
            "cached_tokens": round(self.cached_tokens),
            "saving": self.verdict.saving,
            "claimed": self.verdict.claim,
            "retries": self.retries,
            "rejected_patches": self.rejected_patches,
            "archive_bytes": round(self.archive_bytes),
            "overhead_ms": self.overhead_ms,
        }


def summarize(runs: Sequence[RunRecord], tolerance: float = TOLERANCE) -> list[Row]:
    """A row per (group, arm), in the order the runs came."""
    verdicts = judge(runs, tolerance)
    by: dict[tuple[Group, str], list[RunRecord]] = defaultdict(list)
    for run in runs:
        by[group_of(run), run.arm].append(run)
    rows = []
    for (group, arm), mine in by.items():
        overheads = [
            r.overhead_ms for run in mine for r in run.requests if r.overhead_ms is not None
        ]
        rows.append(
            Row(
                group=group,
                arm=arm,
                seeds=len(mine),
                input_tokens=fmean(run.input_tokens for run in mine),
                cached_tokens=fmean(sum(r.cached_tokens for r in run.requests) for run in mine),
                cost=fmean(run.cost for run in mine),
                score=fmean(run.score for run in mine),
                recall=fmean(run.recall for run in mine),
                violations=sum(run.violations for run in mine),
                retries=sum(run.retries for run in mine),
                rejected_patches=sum(run.rejected_patches for run in mine),
                archive_bytes=fmean(run.archive_bytes for run in mine),
                overhead_ms=round(fmean(overheads), 3) if overheads else None,
                verdict=verdicts[group, arm],
            )
        )
    return rows


def write_report(out: Path, runs: Sequence[RunRecord], tolerance: float = TOLERANCE) -> list[Row]:
    """Write every file of the run into ``out`` (made if missing); the summary's rows."""
    out.mkdir(parents=True, exist_ok=True)
    write_results(out / "results.jsonl", runs)
    rows = summarize(runs, tolerance)
    (out / "summary.json").write_bytes(jsonio.dumps([row.as_json() for row in rows]) + b"\n")
    plots = _plot(out, runs)
    (out / "report.md").write_text(_markdown(runs, rows, plots, tolerance))
    return rows


def _markdown(
    runs: Sequence[RunRecord], rows: Sequence[Row], plots: Sequence[str] | str, tolerance: float
) -> str:
    revision = runs[0].revision if runs else "unknown"
    seeds = sorted({run.key.seed for run in runs})
    lines = [
        "# skillstate bench",
        "",
        f"Source revision `{revision}`; seeds {', '.join(map(str, seeds)) or 'none'}; "
        f"tolerance {tolerance:.2f} on score and recall. Costs are the simulated provider's "
        "bill (prompt cache included) at the price catalog's rates, in USD, averaged over seeds.",
        "",
    ]
    groups: dict[Group, list[Row]] = defaultdict(list)
    for row in rows:
        groups[row.group].append(row)
    for group, mine in groups.items():
        layout = f", markers {group.markers}" if group.markers else ""
        lines += [
            f"## {group.workload}, horizon {group.horizon}, {group.pricing} pricing "
            f"({group.wire}{layout})",
            "",
            "| arm | input tokens | cached | cost | score | recall | violations | retries "
            "| rejected | archive bytes | overhead ms | claim |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for row in mine:
            overhead = f"{row.overhead_ms:.2f}" if row.overhead_ms is not None else "-"
            lines.append(
                f"| {row.arm} | {row.input_tokens:,.0f} | {row.cached_tokens:,.0f} "
                f"| {row.cost:.4f} | {row.score:.2f} | {row.recall:.2f} | {row.violations} "
                f"| {row.retries} | {row.rejected_patches} | {row.archive_bytes:,.0f} "
                f"| {overhead} | {row.verdict.text} |"
            )
        lines.append("")
    if isinstance(plots, str):
        lines += [f"Plots: {plots}", ""]
    else:
        lines += ["## Plots", ""] + [f"![{name}]({name})" for name in plots] + [""]
    return "\n".join(lines)


def _plot(out: Path, runs: Sequence[RunRecord]) -> list[str] | str:
    """The PNG files written (names relative to ``out``), or why none were."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        return "not drawn: matplotlib is not installed (pip install 'skillstate[bench]')"
    names: list[str] = []
    groups: dict[Group, list[RunRecord]] = defaultdict(list)
    for run in runs:
        groups[group_of(run)].append(run)
    for group, mine in groups.items():
        first = min(run.key.seed for run in mine)
        shown = [run for run in mine if run.key.seed == first]
        stem = f"{group.workload}-h{group.horizon}-{group.pricing}-{group.wire}"
        stem += f"-{group.markers}" if group.markers else ""
        series: dict[str, tuple[str, dict[str, list[float]]]] = {
            "cost": ("cumulative cost (USD)", {r.arm: _cumulative(r) for r in shown}),
            "prompt": ("prompt tokens", {r.arm: _prompts(r) for r in shown}),
        }
        for kind, (label, lines) in series.items():
            figure, axes = pyplot.subplots(figsize=(7, 4))
            for arm, values in lines.items():
                axes.plot(range(1, len(values) + 1), values, label=arm)
            axes.set_xlabel("turn")
            axes.set_ylabel(label)
            axes.set_title(f"{group.workload} T={group.horizon}, {group.pricing} (seed {first})")
            axes.legend(fontsize="small")
            figure.tight_layout()
            names.append(f"{kind}-{stem}.png")
            figure.savefig(out / names[-1], dpi=100)
            pyplot.close(figure)
        scores = _scores(mine)
        figure, axes = pyplot.subplots(figsize=(7, 4))
        axes.bar(list(scores), list(scores.values()))
        axes.set_ylim(0, 1.05)
        axes.set_ylabel("score (mean over seeds)")
        axes.set_title(f"{group.workload} T={group.horizon}, {group.pricing}")
        axes.tick_params(axis="x", labelrotation=20)
        figure.tight_layout()
        names.append(f"score-{stem}.png")
        figure.savefig(out / names[-1], dpi=100)
        pyplot.close(figure)
    return names


def _cumulative(run: RunRecord) -> list[float]:
    total, values = 0.0, []
    for request in run.requests:
        total += request.cost
        values.append(total)
    return values


def _prompts(run: RunRecord) -> list[float]:
    return [float(request.prompt_tokens) for request in run.requests]


def _scores(runs: Sequence[RunRecord]) -> Mapping[str, float]:
    by: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        by[run.arm].append(run.score)
    return {arm: fmean(scores) for arm, scores in by.items()}
