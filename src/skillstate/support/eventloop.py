"""The event loop the gateway and the benchmark processes run on: uvloop where installed."""

from __future__ import annotations

import asyncio


def new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop
