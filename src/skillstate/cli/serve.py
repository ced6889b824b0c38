"""``skillstate serve``: run the gateway in the foreground."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Coroutine
from typing import Any

import click

from skillstate import __version__
from skillstate.cli.options import command_flags, load, settings_options
from skillstate.config import Settings
from skillstate.support.eventloop import new_loop

INTERRUPTED_EXIT = 130  # 128 + SIGINT, as shells report it


@click.command("serve")
# No program name: the one that was run (``skillstate-proxy``, or ``skillstate`` for
# ``skillstate serve``) names itself.
@click.version_option(__version__, "--version", message="%(prog)s %(version)s")
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
    from skillstate.outputs.vision.pages import MissingPillow
    from skillstate.server.guard import Exposed
    from skillstate.storage.data_key import DataKeyError
    from skillstate.support.extras import MissingExtra

    try:
        if settings.workers > 1:
            from skillstate.cli.workers import supervise

            raise SystemExit(supervise(settings))
        _run(serve(settings))
    except KeyboardInterrupt:
        raise click.exceptions.Exit(INTERRUPTED_EXIT) from None
    except (Exposed, MissingPillow, MissingExtra, DataKeyError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        raise click.ClickException(
            f"port {settings.port} on {settings.host} is already in use: "
            "stop what listens there, or pick another port with --port"
        ) from None


def _run(main: Coroutine[Any, Any, None]) -> None:
    """On uvloop where it is installed (the ``fast`` extra), else on the standard loop."""
    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(main)
