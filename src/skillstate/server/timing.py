"""The gateway's own time per request: the wall time since the request arrived, less the
time spent waiting on upstreams. Every response says it in ``x-skillstate-overhead-ms``
(for a stream: up to its first byte); the ledger keeps it per request."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from skillstate.support.trace import Trace

OVERHEAD_HEADER = "x-skillstate-overhead-ms"


class Timing:
    """When a request arrived, and how long it has waited on upstreams so far."""

    __slots__ = ("_since", "arrived", "upstream_s")

    def __init__(self, now: float) -> None:
        self.arrived = now
        self.upstream_s = 0.0
        self._since: float | None = None

    def enter(self, now: float) -> None:
        """An upstream call starts (a call already in progress keeps its start)."""
        if self._since is None:
            self._since = now

    def leave(self, now: float) -> None:
        if self._since is not None:
            self.upstream_s += now - self._since
            self._since = None

    def upstream(self, now: float) -> float:
        return self.upstream_s + (now - self._since if self._since is not None else 0.0)

    def overhead(self, now: float) -> float:
        return max(0.0, now - self.arrived - self.upstream(now))


class TracedTiming(Timing):
    """``Timing`` that also keeps the request's ``Trace``: each upstream call (one round)
    begins and ends it a round. Made only while tracing is on (``traced_timing_middleware``),
    so that a gateway without tracing pays nothing for it."""

    __slots__ = ("trace",)

    def __init__(self, now: float, trace: Trace) -> None:
        super().__init__(now)
        self.trace = trace

    def enter(self, now: float) -> None:
        if self._since is None:
            self.trace.enter(now)
        super().enter(now)

    def leave(self, now: float) -> None:
        if self._since is not None:
            self.trace.leave(now)
        super().leave(now)


TIMING: web.RequestKey[Timing] = web.RequestKey("timing", Timing)


def trace_of(request: web.Request) -> Trace | None:
    """The request's trace (None: tracing is off)."""
    timing = request.get(TIMING)
    return timing.trace if isinstance(timing, TracedTiming) else None


@web.middleware
async def timing_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    request[TIMING] = Timing(time.perf_counter())
    return await handler(request)


def traced_timing_middleware(tracing: Callable[[], bool]) -> Middleware:
    """``timing_middleware`` while tracing is on: the request's trace begins as it arrives,
    continuing the client's ``traceparent``; a request arriving while ``tracing()`` says no
    (the collector is down) is timed as without tracing, and costs what it costs then."""

    @web.middleware
    async def traced(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        now = time.perf_counter()
        if tracing():
            trace = Trace.begin(request.headers.get("traceparent"), now)
            request[TIMING] = TracedTiming(now, trace)
        else:
            request[TIMING] = Timing(now)
        return await handler(request)

    return traced


async def add_overhead_header(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: the gateway's time so far, in milliseconds."""
    timing = request.get(TIMING)
    if timing is not None:
        response.headers[OVERHEAD_HEADER] = f"{timing.overhead(time.perf_counter()) * 1000:.2f}"
