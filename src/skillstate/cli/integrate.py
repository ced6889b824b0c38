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
from skillstate.integrations.probes import hook_installed

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
--shell adds the shell lane's PreToolUse hook (codex, claude; docs/shell.md): the host's
read-only shell commands run through `skillstate shell`, which archives the exact output and
shows the model a reduction. Claude Code gets an entry in its settings' hooks.PreToolUse,
beside any of yours; Codex gets a [[hooks.PreToolUse]] group and its trust in config.toml
(user scope only: Codex keeps hook trust in the user's file), and skillstate's data directory
as a writable root of its workspace-write sandbox, where the exact outputs are archived. An
install without --shell takes the hook out again; --verify and --uninstall find it by
themselves.

\b
--project DIR writes the project's files instead (.codex/config.toml, opencode.json,
.claude/settings.json and .mcp.json). --fragment works on the short instruction fragment
(what Σ and recall are) instead: printed, or, with --project, kept in the project's
AGENTS.md or CLAUDE.md. Global instruction files are never edited.

\b
Examples:
  skillstate integrate codex
  skillstate integrate claude --install
  skillstate integrate claude --install --shell
  skillstate integrate opencode --install --project . --model gpt-5
  skillstate integrate codex --fragment --install --project .
"""


_MODES = ("print", "install", "uninstall", "verify")


@click.command("integrate", help=_HELP, short_help="Point an agent host at the gateway.")
@click.argument("host", type=click.Choice([host.value for host in it.Host]))
@click.option("--print", "print_", is_flag=True, help="Show what would be written (default).")
@click.option("--install", is_flag=True, help="Write it, as one transaction.")
@click.option("--uninstall", is_flag=True, help="Take out what --install wrote.")
@click.option("--verify", is_flag=True, help="Report drift, changing nothing; exit 1 on drift.")
@click.option(
    "--project",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    metavar="DIR",
    help="Project scope: this project's files, not the user's.",
)
@click.option(
    "--gateway",
    metavar="URL",
    callback=check_url,
    help="The gateway [from the settings' host and port: http://127.0.0.1:8789].",
)
@click.option("--fragment", is_flag=True, help="The AGENTS.md / CLAUDE.md fragment instead.")
@click.option("--shell", is_flag=True, help="Also the shell lane's hook (codex, claude).")
@click.option("--model", "models", multiple=True, metavar="NAME", help="opencode: a model to list.")
def integrate_command(
    host: str,
    project: Path | None,
    gateway: str | None,
    fragment: bool,
    shell: bool,
    models: tuple[str, ...],
    **modes: bool,
) -> None:
    chosen = [mode for mode in _MODES if modes["print_" if mode == "print" else mode]]
    if len(chosen) > 1:
        raise click.UsageError(f"choose one mode, not {' and '.join('--' + m for m in chosen)}")
    mode = chosen[0] if chosen else "print"
    settings = load(click.get_current_context().find_object(Flags) or Flags())
    if project is not None:
        project = project.absolute()
    if fragment and project is None and mode != "print":
        raise click.UsageError(
            "--fragment is written only into a project's file: give --project DIR "
            "(global instruction files are never edited)"
        )
    if fragment and shell:
        raise click.UsageError("--shell installs a hook, not a fragment: use one of them")
    try:
        if fragment:
            plan = it.fragment(it.Host(host), project or Path("."))
        else:
            url = gateway or gateway_url(settings)
            plan = _integration(it.Host(host), project, url, models, shell, mode, settings.data_dir)
        _run(mode, plan, settings.data_dir / it.RECORD_NAME, fragment)
    except it.IntegrationError as exc:
        raise click.ClickException(str(exc)) from None


def _integration(
    host: it.Host,
    project: Path | None,
    gateway: str,
    models: tuple[str, ...],
    shell: bool,
    mode: str,
    data_dir: Path,
) -> it.Integration:
    """The host's integration for this process's environment: the only place it is read.
    Verify and uninstall include the shell hook when the host's files hold it."""
    env = dict(os.environ)
    # The MCP server by its full path where PATH finds it: a host may not share this PATH.
    command = shutil.which("skillstate", path=env.get("PATH")) or "skillstate"
    where = it.Locations(env, home_directory(env), project)
    if mode in ("verify", "uninstall") and not shell:
        shell = hook_installed(host, where, command)
    return it.integration(host, where, gateway, command, models, shell, Path(data_dir))


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
