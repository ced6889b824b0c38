"""``python -m skillstate.testing.scripted --port 9999``: the scripted upstream by hand.

Serves ``default_policy`` on 127.0.0.1 until interrupted. The server itself lives in
``upstream`` so that the package does not import this module before ``-m`` runs it (runpy warns
about, and duplicates, a module imported twice that way); it is re-exported here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Sequence

from skillstate.testing.upstream import ScriptedUpstream

__all__ = ["ScriptedUpstream", "main"]


async def _serve(port: int) -> None:
    async with ScriptedUpstream(port=port) as upstream:
        print(f"scripted upstream on {upstream.url} (Ctrl-C to stop)", flush=True)
        await asyncio.Event().wait()


def main(argv: Sequence[str] | None = None) -> None:
    """Serve ``default_policy`` on 127.0.0.1 until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m skillstate.testing.scripted")
    parser.add_argument("--port", type=int, default=9999, help="port on 127.0.0.1 (0: any free)")
    args = parser.parse_args(argv)
    # Started in the background by a non-interactive shell, a process inherits SIGINT
    # ignored, and Python then never raises KeyboardInterrupt: interrupting is the one way
    # to stop this server, so it is made to work.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.port))


if __name__ == "__main__":
    main()
