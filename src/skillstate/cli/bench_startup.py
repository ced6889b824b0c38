"""``skillstate bench startup``: how fast ``skillstate --help`` and ``--version``, the shell
hook and ``skillstate shell`` start, each against its floor (``skillstate.bench.startup``)."""

from __future__ import annotations

import click


@click.command("startup")
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=15,
    show_default=True,
    help="Runs of each command (the median is reported).",
)
def startup_command(rounds: int) -> None:
    """The median wall time of `skillstate --help` and `--version` against `python -c 'import
    click, rich'` (target: at most 4x), of `skillstate hook claude` answering a `git status`
    call against `python -c 'import json'` (at most 5x), and of `skillstate shell -- ls`
    against `ls` (at most 0.1 s added)."""
    from skillstate.bench.startup import arms, bench_project, format_report, measure

    with bench_project() as project:
        click.echo(format_report(measure(arms(project), rounds)))
