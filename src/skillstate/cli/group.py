"""The ``skillstate`` command group (click): every command but the command lines of ``hook`` and
``shell`` that ``cli.fast`` answers first (``cli.main``)."""

from __future__ import annotations

from typing import Any

import click

from skillstate import __version__
from skillstate.cli.lazy import Lazy, LazyGroup
from skillstate.cli.options import Flags, group_options, load

COMMANDS = {
    "serve": Lazy(
        "skillstate.cli.serve:serve_command",
        "Start the gateway and run it until interrupted (the default command).",
    ),
    "config": Lazy(
        "skillstate.cli.config:config_command",
        "Print the effective configuration: each key, its value and where it came from.",
    ),
    "state": Lazy(
        "skillstate.cli.state:state_command",
        "Inspect and manage the sessions a running gateway keeps: Σ, epochs, archive refs.",
    ),
    "stats": Lazy(
        "skillstate.cli.stats:stats_command",
        "What the gateway recorded: requests, tokens and cost, and what a pass-through would "
        "have cost (an estimate).",
    ),
    "prices": Lazy(
        "skillstate.cli.prices:prices_command",
        "Print the price catalog: each model's rates in USD per million tokens.",
    ),
    "mcp": Lazy(
        "skillstate.cli.mcp:mcp_command",
        "Serve the archive and the state over MCP on stdin and stdout (stdio transport).",
    ),
    "keys": Lazy(
        "skillstate.cli.keys:keys_command",
        "Virtual keys, one per person or agent, each naming a tenant: `create` shows a new key "
        "once, `list` shows them all (never their text), `revoke` ends one, `budget` changes "
        "what one may spend and send; `data-key` and `rotate-data` look after the key that "
        "seals data at rest.",
    ),
    "db": Lazy(
        "skillstate.cli.db:db_command",
        "The schema of the store (the shared database of `store`, else the SQLite file under "
        "the data directory): `status` says where it stands, `migrate` brings it up to this "
        "gateway's, as the gateway does itself at start.",
    ),
    "audit": Lazy(
        "skillstate.cli.audit:audit_command",
        "Print the audit log of admin actions (keys made and revoked, sessions reset or "
        "collapsed), newest first: when, who (an admin's key, the gateway's token, a local "
        "program, the command line), the action and its target.",
    ),
    "archive": Lazy(
        "skillstate.cli.archive:archive_command",
        "Inspect the archive: the exact spans the gateway collapsed or compacted.",
    ),
    "doctor": Lazy(
        "skillstate.cli.doctor.command:doctor_command",
        "Check that everything is in place: the gateway (reachable, and its version), each "
        "upstream (reachable; no credential is sent), the data directory's permissions, the "
        "agent CLIs on PATH, each integration and the shell hook.",
    ),
    "integrate": Lazy(
        "skillstate.cli.integrate:integrate_command", "Point an agent host at the gateway."
    ),
    "shell": Lazy(
        "skillstate.cli.shell:shell_command",
        "Run one allowed read-only command (git status/log/diff/show, ls, find, tree, wc, grep, "
        "rg, cat, head, tail, test runners, linters), archive its exact output and print a "
        "reduction of it, headed by the ref `skillstate archive get` gives the rest by.",
    ),
    "hook": Lazy(
        "skillstate.cli.shell:hook_command",
        "Answer a PreToolUse event on stdin: a read-only shell command comes back rewritten to "
        "run through `skillstate shell` and allowed; a test runner or linter (it runs the "
        "project's code) rewritten with the decision left to the user (Claude Code) or "
        "untouched (Codex); anything else prints nothing, so the host runs it untouched, "
        "asking as it would.",
    ),
    "bench": Lazy(
        "skillstate.cli.bench_all:bench_command",
        "Measure what skillstate saves, honestly: every arm side by side on seeded workloads, "
        "billed by a simulated provider with prompt caching, with gates before any saving is "
        "claimed.",
    ),
}
"""Each command, where it lives (imported only when it runs) and its short help, which
``skillstate --help`` lists without importing it (tests/cli/test_main.py keeps each equal to
the command's own)."""

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
@group_options
@click.pass_context
def cli(ctx: click.Context, /, **params: Any) -> None:
    flags = Flags.of(params)
    ctx.obj = flags
    if ctx.invoked_subcommand is None:
        from skillstate.cli.serve import start

        start(load(flags))
