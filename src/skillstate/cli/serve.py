"""``skillstate serve``: run the gateway in the foreground."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import click

from skillstate.cli.options import command_flags, load, settings_options
from skillstate.config import Settings
from skillstate.eventloop import new_loop

INTERRUPTED_EXIT = 130  # 128 + SIGINT, as shells report it


@click.command("serve")
@settings_options
def serve_command(**params: Any) -> None:
    """Start the gateway and run it until interrupted (the default command)."""
    start(load(command_flags(params)))


def start(settings: Settings) -> None:
    """Run the gateway until it is cancelled, interrupted or terminated.

    The server stack is imported here rather than at the top so that ``--help``, ``--version``
    and ``config`` stay fast and never depend on it.
    """
    from skillstate.gateway import serve  # type: ignore[import-not-found,unused-ignore]

    try:
        _run(serve(settings))
    except KeyboardInterrupt:
        raise click.exceptions.Exit(INTERRUPTED_EXIT) from None


def _run(main: Coroutine[Any, Any, None]) -> None:
    """On uvloop where it is installed (the ``fast`` extra), else on the standard loop."""
    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(main)
