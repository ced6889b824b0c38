"""Other clients' latency while one huge request is in flight.

The gateway runs as a user starts it (``skillstate serve --mode hybrid``, so the state lane
decodes, counts and decides on every request) in front of the mock provider. A few clients
send small tool-loop requests without pause, each its own session; after a baseline, another
client sends requests of ``--mib`` MiB, one after another, each a tool result of fresh
whitespace-free text (base64: the worst case for a tokenizer, as minified code is). Reported:
the small requests' p50/p99/max at baseline and while a big one was in flight, each big
request's own time and status, and the gateway's peak resident memory. The same load is
first sent to the mock provider directly: what the machine itself adds while a big body is
moved and read (the mock reads it too, on the same cores) is what that arm shows.

The big bodies are built before the measurement and sent from a process of their own, so
that building and writing them does not hold the interpreter that measures the small clients.

Run: ``python -m skillstate.bench.bigbody [--mib 16] [--big 3] [--clients 4] [--mode hybrid]``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import multiprocessing
import os
import random
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

import aiohttp

from skillstate import __version__
from skillstate.bench.harness import mock_and_gateway, percentile, rss_mb, wait_ready
from skillstate.bench.history import TOOLS
from skillstate.support import jsonio
from skillstate.support.eventloop import new_loop


def tool_loop_body(result: str, session: str) -> dict[str, object]:
    """A Chat request of a tool loop whose newest tool result is ``result``."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "read_file", "arguments": json.dumps({"path": f"{session}.b64"})},
    }
    return {
        "model": "bench-model",
        "tools": TOOLS,
        "messages": [
            {"role": "system", "content": "You are a careful coding agent."},
            {"role": "user", "content": f"Summarise {session}.b64."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": result},
        ],
    }


@dataclass(slots=True)
class Window:
    """When the big requests were in flight, and how each went."""

    spans: list[tuple[float, float]] = field(default_factory=list)
    outcomes: list[tuple[float, int]] = field(default_factory=list)

    def holds(self, instant: float) -> bool:
        return any(start <= instant <= end for start, end in self.spans)


def big_bodies(mib: float, count: int) -> list[bytes]:
    """``count`` request bodies, each a tool result of ``mib`` MiB of fresh base64."""
    bodies = []
    for n in range(count):
        data = random.Random(n).randbytes(int(mib * 1024 * 1024 * 3 / 4))
        bodies.append(jsonio.dumps(tool_loop_body(base64.b64encode(data).decode(), f"big{n}")))
    return bodies


def _big_sender(url: str, mib: float, count: int, conn: Connection) -> None:
    """The big client, in a process of its own: building and writing 16 MiB bodies holds an
    interpreter, and must not hold the one measuring the small clients. It builds its bodies,
    says "ready", waits for "go", sends them one after another and answers the ``Window``
    (``time.perf_counter`` is the same clock in every process of the machine)."""
    bodies = big_bodies(mib, count)
    window = Window()

    async def run() -> None:
        timeout = aiohttp.ClientTimeout(total=600)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            for n, body in enumerate(bodies):
                headers = {"content-type": "application/json", "x-skillstate-session": f"big{n}"}
                started = time.perf_counter()
                async with session.post(url, data=io.BytesIO(body), headers=headers) as reply:
                    await reply.read()
                ended = time.perf_counter()
                window.spans.append((started, ended))
                window.outcomes.append((ended - started, reply.status))
                await asyncio.sleep(0.5)

    conn.send("ready")
    conn.recv()
    asyncio.run(run())
    conn.send(window)


async def _small_clients(
    url: str, clients: int, until: threading.Event
) -> list[tuple[float, float]]:
    """(start, seconds) of every small request, until ``until`` is set."""
    samples: list[tuple[float, float]] = []

    async def client(i: int) -> None:
        body = jsonio.dumps(tool_loop_body("def main():\n    return 0\n" * 20, f"small{i}"))
        headers = {"content-type": "application/json", "x-skillstate-session": f"small{i}"}
        async with aiohttp.ClientSession() as session:
            while not until.is_set():
                started = time.perf_counter()
                async with session.post(url, data=body, headers=headers) as reply:
                    await reply.read()
                    if reply.status != 200:
                        raise RuntimeError(f"a small request got {reply.status}")
                samples.append((started, time.perf_counter() - started))
                await asyncio.sleep(0.005)  # a client that thinks a little between calls

    await asyncio.gather(*(client(i) for i in range(clients)))
    return samples


async def _measure(
    url: str, args: argparse.Namespace
) -> tuple[list[tuple[float, float]], Window, float]:
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    sender = context.Process(target=_big_sender, args=(url, args.mib, args.big, theirs))
    sender.start()
    try:
        await asyncio.to_thread(ours.recv)  # its bodies are built
        stop = threading.Event()
        small = asyncio.create_task(_small_clients(url, args.clients, stop))
        await asyncio.sleep(args.baseline)
        big_started = time.perf_counter()
        ours.send("go")
        window: Window = await asyncio.to_thread(ours.recv)
        await asyncio.sleep(0.5)
        stop.set()
        samples = await small
    finally:
        sender.join(timeout=30)
    return samples, window, big_started


@dataclass(slots=True)
class Arm:
    """One arm's figures: small requests before and while big ones were in flight."""

    name: str
    before: list[float]
    during: list[float]
    outcomes: list[tuple[float, int]]


async def _arm(name: str, url: str, args: argparse.Namespace) -> Arm:
    await wait_ready(url, tool_loop_body("ok", "warm"))
    samples, window, big_started = await _measure(url, args)
    before = [d for start, d in samples if start < big_started]
    during = [d for start, d in samples if window.holds(start)]
    return Arm(name, before, during, window.outcomes)


def _line(name: str, durations: list[float]) -> str:
    if not durations:
        return f"{name:30} no requests"
    return (
        f"{name:30} {len(durations):5d} req  p50 {percentile(durations, 0.5):7.2f} ms  "
        f"p99 {percentile(durations, 0.99):7.2f} ms  max {max(durations) * 1000:8.2f} ms"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=float, default=16.0, help="size of each big body")
    parser.add_argument("--big", type=int, default=3, help="big requests, one after another")
    parser.add_argument("--clients", type=int, default=4, help="small clients")
    parser.add_argument("--baseline", type=float, default=3.0, help="seconds before the first")
    parser.add_argument("--mode", default="hybrid", choices=["off", "hybrid", "paper"])
    args = parser.parse_args(argv)
    loop = new_loop()
    try:
        with mock_and_gateway(args.mode) as processes:
            route = "/v1/chat/completions"
            arms = [
                loop.run_until_complete(_arm(name, base + route, args))
                for name, base in (
                    ("direct", processes.mock_url),
                    ("gateway", processes.gateway_url),
                )
            ]
            peak = rss_mb(processes.gateway_pid, "VmHWM")
    finally:
        loop.close()
    print(
        f"skillstate {__version__}: small requests while {args.mib:g} MiB bodies are in "
        f"flight ({args.clients} small clients, gateway in {args.mode} mode, "
        f"{os.cpu_count()} cores)"
    )
    for arm in arms:
        print(_line(f"{arm.name}: baseline", arm.before))
        print(_line(f"{arm.name}: big body in flight", arm.during))
        big = ", ".join(f"{status} in {seconds * 1000:.0f} ms" for seconds, status in arm.outcomes)
        print(f"{arm.name}: big requests {big}")
    if peak is not None:
        print(f"gateway peak RSS: {peak:.1f} MB")


if __name__ == "__main__":
    main()
