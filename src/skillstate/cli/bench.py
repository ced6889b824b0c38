"""``skillstate bench``: the benchmark (../shared/BENCH.md, docs/BENCHMARKS.md).

``bench_command`` is a group whose default command is ``run``: ``skillstate bench [WORKLOAD...]
[options]`` is ``skillstate bench run [WORKLOAD...] [options]``. Other benchmarks join it as
subcommands (``bench_command.add_command(overhead_command)`` gives ``skillstate bench
overhead``); a first argument naming a subcommand runs it instead of ``run``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from skillstate.bench.arms import ARMS, DEFAULT_ARMS, WIRES, Markers, Pricing
from skillstate.bench.record import RunRecord
from skillstate.bench.report import Row, write_report
from skillstate.bench.suite import Job, Plan, run_plan
from skillstate.bench.workload import Variant
from skillstate.bench.workloads import WORKLOADS, Entry, UnknownWorkload, available, load

DEFAULT_OUT = "bench-results"


class BenchGroup(click.Group):
    """A group that runs ``run`` unless its first argument names another subcommand."""

    default = "run"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        help_asked = bool(args) and args[0] in ctx.help_option_names
        if not help_asked and (not args or args[0] not in self.commands):
            args = [self.default, *args]
        return super().parse_args(ctx, args)


@click.group(
    "bench",
    cls=BenchGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
)
def bench_command() -> None:
    """Measure what skillstate saves, honestly: every arm side by side on seeded workloads,
    billed by a simulated provider with prompt caching, with gates before any saving is
    claimed. `skillstate bench [WORKLOAD...] [options]` runs `skillstate bench run`."""


def _numbers(text: str | None) -> list[int]:
    if not text:
        return []
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise click.BadParameter(f"{text!r} is not a comma list of whole numbers") from error


def _names(text: str | None, known: Sequence[str], what: str) -> list[str]:
    if not text:
        return list(known)
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise click.BadParameter(f"unknown {what} {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def _arms_epilog() -> str:
    """Each arm and what it is, for ``bench run --help``."""
    return "\b\nArms:\n" + "\n".join(f"  {arm.name}: {arm.note}" for arm in ARMS.values())


@bench_command.command("run", epilog=_arms_epilog())
@click.argument("workloads", nargs=-1, metavar="[WORKLOAD...]")
@click.option(
    "--arms",
    metavar="A,B,...",
    help=f"Arms to run (default: {', '.join(DEFAULT_ARMS)}; memory and stateful, the paper's "
    "baselines, when named).",
)
@click.option(
    "--horizon", metavar="N[,N...]", help="Steps per session (default: each workload's own)."
)
@click.option("--seed", metavar="S[,S...]", default="1", show_default=True, help="Seeds.")
@click.option(
    "--wire",
    type=click.Choice(list(WIRES)),
    help="The client's wire (default: the pricing's own: chat for openai, anthropic for "
    "anthropic).",
)
@click.option(
    "--pricing",
    metavar="P[,P...]",
    default="openai,anthropic",
    show_default=True,
    help="openai: automatic prefix caching at gpt-4.1's rates; anthropic: explicit cache "
    "breakpoints (where --markers says) at claude-sonnet-4-5's.",
)
@click.option(
    "--markers",
    type=click.Choice([m.value for m in Markers]),
    default=Markers.SYSTEM_NEWEST.value,
    show_default=True,
    help="Where the Messages client puts its prompt-cache breakpoints: none; system-newest "
    "(the system prompt and the newest message, as Claude Code does); all-four (the last "
    "tool, the system prompt in two blocks, the newest message). No effect under openai "
    "pricing, whose clients speak Chat and whose cache is automatic.",
)
@click.option(
    "--variant",
    type=click.Choice([v.value for v in Variant]),
    default=Variant.CAREFUL.value,
    show_default=True,
    help="How the scripted model treats Σ: careful writes it, careless never does, faulty "
    "writes bad patches in the mix.",
)
@click.option(
    "--out",
    "out",
    metavar="DIR",
    default=DEFAULT_OUT,
    show_default=True,
    help="Where results.jsonl, summary.json, report.md and the plots go.",
)
def run_command(
    workloads: tuple[str, ...],
    arms: str | None,
    horizon: str | None,
    seed: str,
    wire: str | None,
    pricing: str,
    markers: str,
    variant: str,
    out: str,
) -> None:
    """Run WORKLOADs (default: every registered one) on every arm and report (each arm is
    listed below).

    A saving is claimed only when every arm finished the same seeds, the arm changed the
    requests, no tool pair was split, score and recall are no worse than passthrough's
    (within 0.02) and, with several seeds, the saving is larger than their spread; otherwise
    the claim column says "no claim" and why. Losses are printed as they are.
    """
    plan = Plan(
        workloads=[(entry, _numbers(horizon)) for entry in _entries(workloads)],
        arms=[ARMS[name] for name in (_names(arms, list(ARMS), "arm") if arms else DEFAULT_ARMS)],
        seeds=_numbers(seed) or [1],
        pricings=[Pricing(p) for p in _names(pricing, [p.value for p in Pricing], "pricing")],
        wire=WIRES[wire] if wire else None,
        variant=Variant(variant),
        markers=Markers(markers),
    )
    console = Console()
    if not console.is_terminal:
        console = Console(width=200)  # a log or a pipe: keep each row on one line
    began = time.monotonic()
    runs = asyncio.run(_run(plan, console))
    rows = write_report(Path(out), runs)
    _show(console, rows)
    console.print(
        f"{len(runs)} runs in {time.monotonic() - began:.1f} s; results, report and plots in {out}/"
    )


def _entries(names: Sequence[str]) -> list[Entry]:
    if not names:
        found = available()
        if not found:
            raise click.ClickException("no workload is available")
        return found
    try:
        return [load(name) for name in names]
    except UnknownWorkload as error:
        raise click.BadParameter(str(error), param_hint="WORKLOAD") from error


async def _run(plan: Plan, console: Console) -> list[RunRecord]:
    jobs = plan.jobs()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        overall = bar.add_task("runs", total=len(jobs))
        current = bar.add_task("", total=1)

        def started(job: Job) -> None:
            if bar.tasks[current].description:  # the previous run is done
                bar.advance(overall)
            bar.update(current, description=job.describe(), completed=0, total=job.horizon)

        def progress(turn: int, horizon: int) -> None:
            bar.update(current, completed=min(turn, horizon), total=horizon)

        runs = await run_plan(plan, started=started, progress=progress)
        bar.advance(overall)
    return runs


def _show(console: Console, rows: Sequence[Row]) -> None:
    table = Table(title="skillstate bench (costs in USD, means over seeds)")
    for name in ("workload", "T", "pricing", "arm"):
        table.add_column(name, no_wrap=True)
    for name in ("input tokens", "cost", "score", "recall"):
        table.add_column(name, justify="right")
    table.add_column("viol.", justify="right")
    table.add_column("claim")
    for row in rows:
        table.add_row(
            row.group.workload,
            str(row.group.horizon),
            row.group.pricing,
            row.arm,
            f"{row.input_tokens:,.0f}",
            f"{row.cost:.4f}",
            f"{row.score:.2f}",
            f"{row.recall:.2f}",
            str(row.violations),
            row.verdict.text,
        )
    console.print(table)


__all__ = ["WORKLOADS", "bench_command"]
