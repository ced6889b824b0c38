"""``skillstate integrate``: point Codex, OpenCode or Claude Code at the gateway
(docs/integrations.md)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import click

from skillstate import integrations as it
from skillstate.cli.client import check_url, gateway_url
from skillstate.cli.options import Flags, load
from skillstate.config.sources import home_directory
from skillstate.integrations.fragment import TEXT

_HELP = """\
Point an agent host at the gateway, and register the `skillstate mcp` server with it.

\b
Modes (one at a time; --print is the default):
  --print      show what would be written, and where; changes nothing
  --install    write it: one transaction over the host's files (each checked after the
               write, all put back on any failure); a second run changes nothing
  --uninstall  take out what --install wrote: a file that still holds exactly that gets its
               old bytes back, otherwise only skillstate's block or keys are removed
  --verify     read only: report where the files differ from what this version would write
               (exit 1 when they do)

\b
What each host gets (no key is ever written; the host keeps its own key or login):
  codex     $CODEX_HOME/config.toml (~/.codex): a managed provider block (wire_api
            "responses"), model_provider = "skillstate", and the MCP server
  opencode  $XDG_CONFIG_HOME/opencode/opencode.json (or $OPENCODE_CONFIG): provider
            "skillstate" and the MCP server
  claude    $CLAUDE_CONFIG_DIR/settings.json (~/.claude): env.ANTHROPIC_BASE_URL, and the
            MCP server in ~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json)

\b
--project DIR writes the project's files instead (.codex/config.toml, opencode.json,
.claude/settings.json and .mcp.json). --fragment works on the short instruction fragment
(what Σ and recall are) instead: printed, or, with --project, kept in the project's
AGENTS.md or CLAUDE.md. Global instruction files are never edited.

\b
Examples:
  skillstate integrate codex
  skillstate integrate claude --install
  skillstate integrate opencode --install --project . --model gpt-5
  skillstate integrate codex --fragment --install --project .
"""


@click.command("integrate", help=_HELP, short_help="Point an agent host at the gateway.")
@click.argument("host", type=click.Choice(["codex", "opencode", "claude"]))
@click.option("--print", "mode", flag_value="print", default=True, help="Show; change nothing.")
@click.option("--install", "mode", flag_value="install", help="Write it, as one transaction.")
@click.option("--uninstall", "mode", flag_value="uninstall", help="Take out what was written.")
@click.option("--verify", "mode", flag_value="verify", help="Report drift; exit 1 on drift.")
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project scope: this project's files, not the user's.",
)
@click.option(
    "--gateway",
    metavar="URL",
    callback=check_url,
    help="The gateway [from the settings' host and port: http://127.0.0.1:8789].",
)
@click.option("--fragment", is_flag=True, help="The AGENTS.md / CLAUDE.md fragment instead.")
@click.option("--model", "models", multiple=True, metavar="NAME", help="opencode: a model to list.")
def integrate_command(
    host: str,
    mode: str,
    project: Path | None,
    gateway: str | None,
    fragment: bool,
    models: tuple[str, ...],
) -> None:
    settings = load(click.get_current_context().find_object(Flags) or Flags())
    env = dict(os.environ)
    chosen = it.Host(host)
    if project is not None:
        project = project.absolute()
    if fragment:
        if project is None and mode != "print":
            raise click.UsageError(
                "--fragment is written only into a project's file: give --project DIR "
                "(global instruction files are never edited)"
            )
        plan = it.fragment(chosen, project or Path("."))
    else:
        command = shutil.which("skillstate", path=env.get("PATH")) or "skillstate"
        where = it.Locations(env, home_directory(env), project)
        plan = it.integration(chosen, where, gateway or gateway_url(settings), command, models)
    record = settings.data_dir / it.RECORD_NAME
    try:
        _run(mode, plan, record, fragment)
    except it.IntegrationError as exc:
        raise click.ClickException(str(exc)) from None


def _run(mode: str, plan: it.Integration, record: Path, fragment: bool) -> None:
    if mode == "print":
        click.echo(TEXT if fragment else it.snippet(plan), nl=False)
    elif mode == "install":
        changed = it.install(plan, record)
        _report(changed, "installed in", "already installed: nothing changed")
        for note in plan.notes:
            click.echo(note)
    elif mode == "uninstall":
        changed = it.uninstall(plan, record)
        _report(changed, "removed from", "nothing of skillstate's to remove")
    else:
        problems = it.verify(plan)
        for problem in problems:
            click.echo(problem)
        if problems:
            raise click.exceptions.Exit(1)
        click.echo(f"{plan.host.value}: installed and up to date")


def _report(changed: list[Path], done: str, nothing: str) -> None:
    if not changed:
        click.echo(nothing)
    for path in changed:
        click.echo(f"{done} {path}")
