"""The ``skillstate`` and ``skillstate-proxy`` programs."""

from __future__ import annotations

from typing import Any

import click

from skillstate import __version__
from skillstate.cli.lazy import LazyGroup
from skillstate.cli.options import Flags, load, settings_options

COMMANDS = {
    "serve": "skillstate.cli.serve:serve_command",
    "config": "skillstate.cli.config:config_command",
    "state": "skillstate.cli.state:state_command",
    "stats": "skillstate.cli.stats:stats_command",
    "prices": "skillstate.cli.prices:prices_command",
    "mcp": "skillstate.cli.mcp:mcp_command",
    "archive": "skillstate.cli.archive:archive_command",
    "doctor": "skillstate.cli.doctor.command:doctor_command",
    "integrate": "skillstate.cli.integrate:integrate_command",
    "shell": "skillstate.cli.shell:shell_command",
    "hook": "skillstate.cli.shell:hook_command",
    "bench": "skillstate.cli.bench_all:bench_command",
}
"""Each command and where it lives, imported only when it runs (``LazyGroup``)."""

_HELP = """\
A local context gateway for LLM agents: it sits between your agent and its model provider
and keeps each session's context bounded by an explicit, structured execution state.

\b
Examples:
  skillstate --upstream https://api.openai.com/v1
  skillstate --upstream http://127.0.0.1:8080/v1 --upstream-wire openai-chat

A local or other OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio) gets the
"compatible" profile, detected from its URL: docs/upstreams.md says what it changes.

Without a command, skillstate starts the gateway, as `skillstate serve` does.
"""


@click.group(
    "skillstate",
    cls=LazyGroup,
    lazy=COMMANDS,
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
        from skillstate.cli.serve import start

        start(load(flags))


def main() -> None:
    """Entry point of ``skillstate``."""
    cli.main(prog_name="skillstate")


def proxy_main() -> None:
    """Entry point of ``skillstate-proxy``: the ``serve`` command as a program of its own."""
    from skillstate.cli.serve import serve_command

    serve_command.main(prog_name="skillstate-proxy")
