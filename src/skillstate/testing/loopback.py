"""An aiohttp application served on a free loopback port, for as long as a block runs: the
small providers a test or a benchmark writes for itself (``async with on_loopback(app) as
url``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def on_loopback(app: web.Application) -> AsyncIterator[str]:
    """``app`` on ``127.0.0.1`` at a port the system chose; its base URL (no trailing
    slash). Cleaned up on exit."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
