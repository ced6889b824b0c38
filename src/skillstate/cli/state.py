"""``skillstate state``: the sessions a running gateway keeps, through its state routes.

``list``, ``show ID``, ``reset ID`` and ``collapse ID`` each make one HTTP request to the
gateway's ``/state`` routes (see ``server.state_routes``): the gateway owns the stores, so the
CLI never opens them itself and cannot race a running gateway. The gateway is found at
``--url``, else at the ``host`` and ``port`` of the settings (the same config file,
environment and flags as ``skillstate`` itself: ``http://127.0.0.1:8789`` by default).
"""

from __future__ import annotations

from typing import Any

import click

from skillstate.cli.client import client_options, print_json, request
from skillstate.cli.table import byte_size, local_time, print_table

_COLUMNS = ("SESSION", "STEP", "VERSION", "STATE", "LAST SEEN")


@click.group("state")
def state_command() -> None:
    """Inspect and manage the sessions a running gateway keeps: Σ, epochs, archive refs."""


@state_command.command("list")
@client_options
def list_command(url: str | None, as_json: bool) -> None:
    """List the sessions with a state, most recently seen first."""
    body = request("GET", url, "/state")
    if as_json:
        print_json(body)
        return
    sessions = body.get("sessions", [])
    if not sessions:
        click.echo("no sessions")
        return
    print_table([_COLUMNS, *(_row(line) for line in sessions)], right=(1, 2, 3))


@state_command.command("show")
@click.argument("session")
@client_options
def show_command(session: str, url: str | None, as_json: bool) -> None:
    """Show SESSION: Σ, its step, the last request's context and window, the per-turn index,
    the epoch and the archive refs, as a tree with local times (`--json`: the gateway's JSON,
    times in seconds since the epoch)."""
    body = request("GET", url, "/state", {"session": session})
    if as_json:
        print_json(body)
        return
    from rich.console import Console

    from skillstate.cli.state_tree import session_tree

    Console(highlight=False).print(session_tree(body))


@state_command.command("reset")
@click.argument("session")
@client_options
def reset_command(session: str, url: str | None, as_json: bool) -> None:
    """Forget SESSION's Σ, its epoch and its archive index; its next request starts afresh."""
    body = request("DELETE", url, "/state", {"session": session})
    if as_json:
        print_json(body)
        return
    count = int(body.get("archive_entries_forgotten", 0))
    entries = "1 archive entry" if count == 1 else f"{count} archive entries"
    click.echo(f"session {session} reset: Σ, its epoch and {entries} forgotten")


@state_command.command("collapse")
@click.argument("session")
@client_options
def collapse_command(session: str, url: str | None, as_json: bool) -> None:
    """Force an epoch boundary on SESSION's next request."""
    body = request("POST", url, "/state/collapse", {"session": session})
    if as_json:
        print_json(body)
    else:
        click.echo(f"session {session}: collapse forced on its next request")


def _row(line: dict[str, Any]) -> tuple[str, str, str, str, str]:
    return (
        str(line.get("session", "")),
        str(line.get("step", "")),
        str(line.get("version", "")),
        byte_size(int(line.get("state_bytes", 0))),
        local_time(line.get("last_seen")),
    )
