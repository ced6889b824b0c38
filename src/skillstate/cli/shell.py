"""``skillstate shell`` and ``skillstate hook``: the shell lane's two commands (docs/shell.md).

``shell -- CMD...`` runs one allowed command (judged again here) and prints its reduced
output with the archive ref of the exact one; exit status: the command's own, 2 for a
command the allowlist refuses (nothing runs), 127 for a program that cannot start.
``hook claude|codex`` answers a host's PreToolUse event read on stdin; it always exits 0.

These are the click forms, for ``--help`` and the command lines ``cli.fast`` leaves to the
group (the shared flags, flags before the command name); both call ``cli.fast``'s functions,
which is what runs the command lines an agent host uses.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from skillstate.cli.options import command_flags, group_options, load
from skillstate.cli.shell_settings import ShellSettings


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
@group_options  # the shared flags, with a --lanes help that imports no lane (a fast --help)
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
    from skillstate.cli.fast import shell

    def settings() -> ShellSettings:
        loaded = load(command_flags(params))
        key = None if loaded.data_key is None else loaded.data_key.get_secret_value()
        return ShellSettings(
            Path(loaded.data_dir),
            loaded.archive_ttl_days,
            loaded.archive_max_mb,
            loaded.data_key_file,
            key,
        )

    raise click.exceptions.Exit(shell(command, project, via_rtk=via_rtk, settings=settings))


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
    from skillstate.cli.fast import hook

    hook(host, program, sys.stdin.read(), os.environ)
