"""``skillstate doctor``: every check, one a line, each problem with the command that fixes it;
exit 1 when something is wrong."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import click

from skillstate.cli.doctor import Check, Surroundings, examine, healthy, report_json
from skillstate.cli.options import command_flags, load, settings_options
from skillstate.cli.table import print_table

PROBLEM_EXIT = 1


@click.command("doctor")
@settings_options
@click.option("--json", "as_json", is_flag=True, help='Print JSON: {"ok", "checks": [...]}.')
def doctor_command(as_json: bool, **params: Any) -> None:
    """Check that everything is in place: the gateway (reachable, and its version), each
    upstream (reachable; no credential is sent), the data directory's permissions, the agent
    CLIs on PATH, each integration and the shell hook.

    The flags are the gateway's, so this checks the gateway `skillstate` with the same flags
    would run. Exits 1 when a check fails; information (a CLI not installed) is no failure.
    """
    flags = command_flags(params)
    settings = load(flags)
    checks = asyncio.run(examine(settings, Surroundings(config_path=flags.config_path)))
    if as_json:
        click.echo(json.dumps(report_json(checks), indent=2))
    else:
        _print(checks)
    if not healthy(checks):
        raise click.exceptions.Exit(PROBLEM_EXIT)


def _print(checks: list[Check]) -> None:
    print_table([["check", "status", "detail"]] + [[c.name, c.status, c.detail] for c in checks])
    problems = [check for check in checks if check.ok is False]
    if not problems:
        click.echo("\nno problems found")
        return
    click.echo(f"\n{len(problems)} problem(s):")
    for check in problems:
        click.echo(f"  {check.name}: {check.fix or 'see the detail above'}")
