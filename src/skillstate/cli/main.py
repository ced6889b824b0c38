"""The ``skillstate`` and ``skillstate-proxy`` programs.

``main`` gives the command line to ``cli.fast`` first, before click is imported: ``skillstate
hook`` and ``skillstate shell``, which an agent host runs around every shell call, start in
milliseconds. Every other command line goes to the click group (``cli.group.cli``). ``cli`` and
``COMMANDS`` are the group's, imported when first asked for here.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillstate.cli.group import COMMANDS, cli

__all__ = ["COMMANDS", "cli", "main", "proxy_main"]


def __getattr__(name: str) -> Any:
    if name in ("cli", "COMMANDS"):
        from skillstate.cli import group

        return getattr(group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Entry point of ``skillstate``."""
    from skillstate.cli.fast import run

    try:
        code = run(sys.argv[1:])
    except BrokenPipeError:  # the reader left (`skillstate shell -- git log | head -1`)
        # quiet, as click is: no traceback, and nothing more flushed at exit; status 1
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    if code is not None:
        sys.exit(code)
    from skillstate.cli.group import cli

    cli.main(prog_name="skillstate")


def proxy_main() -> None:
    """Entry point of ``skillstate-proxy``: the ``serve`` command as a program of its own."""
    from skillstate.cli.serve import serve_command

    serve_command.main(prog_name="skillstate-proxy")
