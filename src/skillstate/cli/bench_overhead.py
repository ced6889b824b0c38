"""``skillstate bench overhead``: the gateway's overhead against going direct and against a peer
gateway (LiteLLM's proxy), in one run on one machine (``skillstate.bench.peers``).

It is meant to become ``skillstate bench overhead`` once the ``bench`` group lands."""

from __future__ import annotations

import json
from pathlib import Path

import click

from skillstate.bench.litellm_proxy import DEFAULT_VENV

ARMS = ("direct", "forwarder", "off", "hybrid", "litellm", "otel-down")


@click.command("overhead")
@click.option(
    "--arm",
    "arms",
    multiple=True,
    type=click.Choice(ARMS),
    help="An arm to run (repeat for more; default: all). direct always runs: it is the "
    "baseline. litellm runs where `make peers` installed it; otel-down (off with tracing to a "
    "collector that is down) only when named.",
)
@click.option(
    "--seconds",
    type=click.FloatRange(min=0.1),
    default=4.0,
    show_default=True,
    help="Load time per arm in each cell.",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Alternations of the arms in each cell.",
)
@click.option(
    "--turns",
    type=click.IntRange(min=1),
    default=120,
    show_default=True,
    help="Tool steps in the long session the hybrid arm runs on.",
)
@click.option(
    "--litellm-venv",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_VENV,
    show_default=True,
    help="The virtual environment LiteLLM's proxy is installed in.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the measurements here as JSON.",
)
def overhead_command(
    arms: tuple[str, ...],
    seconds: float,
    rounds: int,
    turns: int,
    litellm_venv: Path,
    json_path: Path | None,
) -> None:
    """Overhead against direct and against LiteLLM's proxy, in one run: requests/s, added
    p50/p99 (and time to first byte for streams) at concurrency 1 and 64, each server's CPU
    per request (its own accounting) and RSS, each arm as a ratio to the bare forwarder
    against issue 28's targets, and the ratios of skillstate to LiteLLM against issue 9's.

    \b
    Arms, all in front of the same mock provider:
      direct     the mock itself (the baseline)
      forwarder  a bare aiohttp forwarder (the floor for a Python proxy), on both
      off        skillstate serve --mode off, on a short request and on the long session
      hybrid     skillstate serve --mode hybrid, on both (on the short request a session
                 before its first boundary)
      litellm    LiteLLM's proxy (no database, telemetry off), on both
    otel-down  off with OpenTelemetry tracing to a collector that is down (only when named)
    """
    from skillstate.bench import floor
    from skillstate.bench.peers import run
    from skillstate.bench.peers_report import format_report

    report = run(arms, litellm_venv, seconds, rounds, turns)
    click.echo(format_report(report))
    if json_path is not None:
        data = report.as_json()
        data["against_forwarder"] = floor.as_json(floor.figures(report.cells))
        json_path.write_text(json.dumps(data, indent=2))
