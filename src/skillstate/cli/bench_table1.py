"""``skillstate bench table1``: the SKILL.state paper's Table 1 side by side
(``skillstate.bench.table1``)."""

from __future__ import annotations

import click

from skillstate.bench.table1 import HORIZONS, SEEDS
from skillstate.bench.workloads.warehouse_paper import TABLE_NOISE


def _numbers(text: str) -> list[int]:
    try:
        found = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise click.BadParameter(f"{text!r} is not a comma list of whole numbers") from error
    if not found or min(found) < 1:
        raise click.BadParameter(f"{text!r}: give positive whole numbers")
    return found


@click.command("table1")
@click.option(
    "--horizon",
    metavar="N[,N...]",
    default=",".join(map(str, HORIZONS)),
    show_default=True,
    help="Steps per session.",
)
@click.option(
    "--seed", metavar="S[,S...]", default=",".join(map(str, SEEDS)), show_default=True,
    help="Seeds.",
)  # fmt: skip
@click.option(
    "--noise",
    type=click.IntRange(min=0),
    default=TABLE_NOISE,
    show_default=True,
    help="Telemetry lines after each step's event (the paper's levels: 5, 20, 50; 0: none).",
)
@click.option(
    "--out",
    metavar="DIR",
    default="bench-results/table1",
    show_default=True,
    help="Where results.jsonl, table1.md and table1.png go.",
)
def table1_command(horizon: str, seed: str, noise: int, out: str) -> None:
    """Reproduce the paper's Table 1: the warehouse in the paper's layout (warehouse-paper,
    NOISE telemetry lines per step) on its four baselines, ReAct (passthrough), Memory (the
    model's notes and its 3 most recent turns), Stateful (the notes and the whole history) and
    SKILL.state (paper mode), under OpenAI pricing: prompt characters per call, input and total
    tokens, accuracy and how many times fewer input tokens than ReAct, beside the paper's
    published figures. The accuracy is the scripted model's: it says whether the facts reached
    the model, not how well a real one reasons over a long context."""
    import asyncio
    import functools
    from pathlib import Path

    from skillstate.bench.arms import ARMS, Pricing
    from skillstate.bench.record import write_results
    from skillstate.bench.suite import Job, Plan, run_plan
    from skillstate.bench.table1 import ARMS as TABLE_ARMS
    from skillstate.bench.table1 import WORKLOAD, cells, markdown, plot
    from skillstate.bench.workloads import Entry
    from skillstate.bench.workloads.warehouse_paper import DEFAULT_HORIZON, build

    horizons, seeds = _numbers(horizon), _numbers(seed)
    plan = Plan(
        workloads=[
            (Entry(WORKLOAD, functools.partial(build, noise=noise), DEFAULT_HORIZON), horizons)
        ],
        arms=[ARMS[name] for name in TABLE_ARMS],
        seeds=seeds,
        pricings=[Pricing.OPENAI],
    )
    jobs = plan.jobs()
    done = 0

    def started(job: Job) -> None:
        nonlocal done
        done += 1
        click.echo(f"[{done}/{len(jobs)}] {job.describe()}", err=True)

    runs = asyncio.run(run_plan(plan, started=started))
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    write_results(folder / "results.jsonl", runs)
    found = cells(runs)
    table = markdown(found, noise)
    (folder / "table1.md").write_text(table)
    unplotted = plot(found, folder / "table1.png")
    click.echo(table)
    click.echo(unplotted or f"plot: {folder / 'table1.png'}")
