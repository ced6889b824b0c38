"""``skillstate shell`` and ``skillstate hook``: the shell lane's two commands (docs/shell.md).

``shell -- CMD...`` runs one allowed command (judged again here) and prints its reduced
output with the archive ref of the exact one; exit status: the command's own, 2 for a
command the allowlist refuses (nothing runs), 127 for a program that cannot start.
``hook claude|codex`` answers a host's PreToolUse event read on stdin; it always exits 0.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import sys
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from skillstate.cli.options import command_flags, load, settings_options
from skillstate.config import Settings

if TYPE_CHECKING:
    from skillstate.integrations.shell.run import Outcome

T = TypeVar("T")
_TICK_S = 0.01
_MANAGED_CLAUDE = Path("/etc/claude-code/managed-settings.json")


@click.command(
    "shell",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "--project",
    metavar="DIR",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="The project root the command must stay in (default: the working directory); never "
    "the home directory or a system folder.",
)
@click.option("--via-rtk", is_flag=True, help="Hand the command to rtk when it is on PATH.")
@settings_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def shell_command(
    command: tuple[str, ...], project: Path | None, via_rtk: bool, **params: Any
) -> None:
    """Run one allowed read-only command (git status/log/diff/show, ls, find, tree, wc,
    grep, rg, cat, head, tail, test runners, linters), archive its exact output and print a
    reduction of it, headed by the ref `skillstate archive get` gives the rest by.

    \b
    Example:
      skillstate shell -- git diff HEAD~3
    """
    from skillstate.integrations.shell import Place, decide_argv
    from skillstate.integrations.shell.run import REFUSED_EXIT, execute, prepared

    cwd = Path.cwd()
    place = Place.of(project or cwd, cwd)
    decision = decide_argv(command, place)
    if not decision.allowed:
        click.echo(f"skillstate shell: refused, nothing ran: {decision.reason}", err=True)
        raise click.exceptions.Exit(REFUSED_EXIT)
    rtk = shutil.which("rtk") if via_rtk else None
    settings = None if rtk is not None else load(command_flags(params))
    with prepared(decision.argv, cwd, place.root, place.environ) as (argv, env):
        outcome = execute([rtk, *argv] if rtk is not None else argv, cwd, env)
    if settings is None:  # rtk's output as rtk gives it
        _write(outcome.stdout, outcome.stderr)
        raise click.exceptions.Exit(outcome.code)
    shown = _shown(settings, decision.argv, decision.family, outcome)
    _write(shown, outcome.stderr)
    raise click.exceptions.Exit(outcome.code)


def _shown(settings: Settings, argv: Sequence[str], family: str, outcome: Outcome) -> bytes:
    """The reduction with its header when it pays and the archive kept the exact output;
    else the exact stdout (nothing is reduced that was not archived)."""
    from skillstate.integrations.shell.run import reduction, shown

    reduced = reduction(family, outcome)
    if reduced is None:
        return outcome.stdout
    try:
        ref = _run(_keep(settings, argv, outcome))
    except Exception as error:  # a store that cannot keep it, for any reason: show it all
        click.echo(f"skillstate shell: archive unavailable ({error}); output unreduced", err=True)
        return outcome.stdout
    total = len(outcome.stdout.decode("utf-8", "replace"))
    return shown(reduced, ref, total)


def _run(work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` for a sandboxed process. Codex's sandbox forbids ``send`` on sockets,
    and asyncio wakes its loop from another thread (where the stores do their file work) by
    sending a byte to itself: without a tick the loop would sleep through the wakeup for ever.
    """
    loop = asyncio.new_event_loop()
    _tick(loop)
    try:
        return loop.run_until_complete(work)
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def _tick(loop: asyncio.AbstractEventLoop) -> None:
    loop.call_later(_TICK_S, _tick, loop)


async def _keep(settings: Settings, argv: Sequence[str], outcome: Outcome) -> str:
    from skillstate.archive import Archive
    from skillstate.integrations.shell.run import keep
    from skillstate.storage import StoreOptions, open_stores

    options = StoreOptions.of_archive(settings.archive_ttl_days, settings.archive_max_mb)
    # A store that cannot open says why in the one line _shown prints, not in three.
    logging.getLogger("skillstate.storage").setLevel(logging.ERROR)
    stores = await open_stores(Path(settings.data_dir), options=options)
    try:
        if stores.degraded or stores.disk_archive is None:
            raise RuntimeError(stores.degraded or "no archive store")
        return await keep(Archive(stores.archive), argv, outcome)
    finally:
        await stores.close()


def _write(stdout: bytes, stderr: bytes) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.write(stdout)
    sys.stdout.buffer.flush()
    sys.stderr.flush()
    sys.stderr.buffer.write(stderr)
    sys.stderr.buffer.flush()


@click.command("hook")
@click.argument("host", type=click.Choice(["claude", "codex"]))
@click.option(
    "--program",
    default="skillstate",
    show_default=True,
    help="How the rewritten command calls skillstate.",
)
def hook_command(host: str, program: str) -> None:
    """Answer a PreToolUse event on stdin: a read-only shell command comes back rewritten to
    run through `skillstate shell` and allowed; a test runner or linter (it runs the project's
    code) rewritten with the decision left to the user (Claude Code) or untouched (Codex);
    anything else prints nothing, so the host runs it untouched, asking as it would. Nothing is
    allowed in a session whose project is the home directory. Always exits 0."""
    import os

    from skillstate.integrations.shell import Host, answer

    project = os.environ.get("CLAUDE_PROJECT_DIR")  # what Claude Code gives its hooks
    rules = _rule_files(Host(host), os.environ)
    reply = answer(sys.stdin.read(), Host(host), program=program, project=project, rule_files=rules)
    if reply.note:
        click.echo(reply.note, err=True)
    if reply.output:
        click.echo(reply.output)


def _rule_files(host: object, environ: Mapping[str, str]) -> list[Path]:
    """The host's permission rules outside the project: Claude Code's user and managed
    settings, Codex's ``rules/*.rules`` beside its config."""
    from skillstate.config.sources import home_directory
    from skillstate.integrations import claude, codex
    from skillstate.integrations.model import Locations
    from skillstate.integrations.shell import Host

    where = Locations(dict(environ), home_directory(environ))
    if host is Host.CLAUDE:
        return [claude.settings_path(where), _MANAGED_CLAUDE]
    folder = codex.config_path(where).parent / "rules"
    return sorted(folder.glob("*.rules")) if folder.is_dir() else []
