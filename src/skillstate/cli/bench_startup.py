"""``skillstate bench startup``: how fast ``skillstate --help`` and ``--version`` answer, against
importing click and rich alone (``skillstate.bench.startup``)."""

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
    click, rich'`, and their ratio to it (the target: at most 4x)."""
    from skillstate.bench.startup import arms, format_report, measure

    click.echo(format_report(measure(arms(), rounds)))
