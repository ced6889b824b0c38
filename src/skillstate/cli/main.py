"""The ``skillstate`` and ``skillstate-proxy`` programs."""

from __future__ import annotations

from typing import Any

import click

from skillstate import __version__
from skillstate.cli.archive import archive_command
from skillstate.cli.bench import bench_command
from skillstate.cli.bench_overhead import overhead_command
from skillstate.cli.config import config_command
from skillstate.cli.integrate import integrate_command
from skillstate.cli.mcp import mcp_command
from skillstate.cli.options import Flags, load, settings_options
from skillstate.cli.prices import prices_command
from skillstate.cli.serve import serve_command, start
from skillstate.cli.state import state_command
from skillstate.cli.stats import stats_command

_HELP = """\
A local context gateway for LLM agents: it sits between your agent and its model provider
and keeps each session's context bounded by an explicit, structured execution state.

\b
Example:
  skillstate --upstream https://api.openai.com/v1

Without a command, skillstate starts the gateway, as `skillstate serve` does.
"""


@click.group(
    "skillstate",
    help=_HELP,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(
    __version__, "--version", prog_name="skillstate", message="%(prog)s %(version)s"
)
@settings_options
@click.pass_context
def cli(ctx: click.Context, /, **params: Any) -> None:
    flags = Flags.of(params)
    ctx.obj = flags
    if ctx.invoked_subcommand is None:
        start(load(flags))


cli.add_command(serve_command)
cli.add_command(config_command)
cli.add_command(state_command)
cli.add_command(stats_command)
cli.add_command(prices_command)
cli.add_command(mcp_command)
cli.add_command(integrate_command)
cli.add_command(archive_command)
bench_command.add_command(overhead_command, "overhead")
cli.add_command(bench_command)


def main() -> None:
    """Entry point of ``skillstate``."""
    cli.main(prog_name="skillstate")


def proxy_main() -> None:
    """Entry point of ``skillstate-proxy``: the ``serve`` command as a program of its own."""
    serve_command.main(prog_name="skillstate-proxy")
