"""The load generator the overhead benchmarks share: ``concurrency`` workers post one body to
one URL in a loop for a fixed time, each timing its whole request and its first byte; ``row``
summarises what they measured as requests/s and percentiles."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import aiohttp

from skillstate.bench.harness import percentile

Headers = Callable[[int], Mapping[str, str]]
"""The headers worker ``n`` sends (a session of its own, say)."""


@dataclass(slots=True)
class Sample:
    """Seconds per request (whole and to the first byte), and the wall time they took."""

    total: list[float] = field(default_factory=list)
    first_byte: list[float] = field(default_factory=list)
    elapsed: float = 0.0

    def extend(self, other: Sample) -> None:
        self.total += other.total
        self.first_byte += other.first_byte
        self.elapsed += other.elapsed


@dataclass(slots=True)
class Row:
    arm: str
    stream: bool
    concurrency: int
    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    ttfb_p50_ms: float | None
    ttfb_p99_ms: float | None
    cpu_ms: float | None = None
    """The serving process's own CPU time (user and system, its descendants included) per
    request it served in this cell, where it was measured."""


def _no_headers(worker: int) -> Mapping[str, str]:
    return {}


async def _one(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    sample: Sample,
) -> None:
    started = time.perf_counter()
    sent = {"content-type": "application/json", **headers}
    async with session.post(url, data=body, headers=sent) as reply:
        first = True
        async for _ in reply.content.iter_any():
            if first:
                sample.first_byte.append(time.perf_counter() - started)
                first = False
        if reply.status != 200:
            raise RuntimeError(f"{url} answered {reply.status}")
    sample.total.append(time.perf_counter() - started)


async def load(
    url: str,
    body: bytes,
    concurrency: int,
    seconds: float,
    headers: Headers = _no_headers,
    at_least: int = 0,
) -> Sample:
    """``concurrency`` workers posting ``body`` to ``url`` until ``seconds`` have passed, each
    making at least ``at_least`` requests (a warm-up that must reach every worker's session)."""
    sample = Sample()
    deadline = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker(n: int) -> None:
            sent = headers(n)
            done = 0
            while done < at_least or time.perf_counter() < deadline:
                await _one(session, url, body, sent, sample)
                done += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(n) for n in range(concurrency)))
        sample.elapsed = time.perf_counter() - started
    return sample


def row(
    arm: str, stream: bool, concurrency: int, sample: Sample, cpu_s: float | None = None
) -> Row:
    """What ``sample`` measured: requests/s, p50/p99 of the whole request and, for streams, of
    the time to first byte; with ``cpu_s``, the server's CPU seconds over the same requests,
    as milliseconds per request."""
    served = len(sample.total)
    ttfb = sample.first_byte if stream else []
    return Row(
        arm=arm,
        stream=stream,
        concurrency=concurrency,
        requests=served,
        rps=served / sample.elapsed if sample.elapsed else 0.0,
        p50_ms=percentile(sample.total, 0.50),
        p99_ms=percentile(sample.total, 0.99),
        ttfb_p50_ms=percentile(ttfb, 0.50) if ttfb else None,
        ttfb_p99_ms=percentile(ttfb, 0.99) if ttfb else None,
        cpu_ms=cpu_s * 1000 / served if cpu_s is not None and served else None,
    )
