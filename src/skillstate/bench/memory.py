"""Issue 11's memory figure: the gateway's resident memory after many sessions.

The gateway runs as a user starts it (``skillstate serve --mode MODE``) in front of the mock
provider. ``--sessions`` sessions (eight at a time) each play ``--turns`` turns of the history
benchmark's Chat tool loop (``bench.history``: one ``read_file`` call and a ~2.8 KB result a
turn, the history re-sent whole on every request). Reported: the gateway's RSS once it
answers, after the sessions, and again after ``--idle`` seconds with nothing to do (what
stays).

Run: ``python -m skillstate.bench.memory [--sessions 1000] [--turns 20] [--mode hybrid]``.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp

from skillstate import __version__
from skillstate.bench.harness import mock_and_gateway, rss_mb, wait_ready
from skillstate.bench.history import ROUTE, TOOLS, turn_messages
from skillstate.eventloop import new_loop

AT_ONCE = 8


@dataclass(frozen=True, slots=True)
class Memory:
    """RSS in MB: once the gateway answers, after the sessions, after the idle wait."""

    mode: str
    sessions: int
    turns: int
    start_mb: float
    after_mb: float
    idle_mb: float


def body(session: int, turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": f"Task {session}: read the project's stages."},
    ]
    for turn in range(1, turns + 1):
        messages += turn_messages(turn)
    return {"model": "bench-model", "tools": TOOLS, "messages": messages}


async def _play(url: str, sessions: int, turns: int, mode: str) -> None:
    gate = asyncio.Semaphore(AT_ONCE)

    async def one(session: int, http: aiohttp.ClientSession) -> None:
        headers = {"x-skillstate-session": f"memory-{session}", "x-skillstate-mode": mode}
        async with gate:
            for turn in range(1, turns + 1):
                async with http.post(url, json=body(session, turn), headers=headers) as reply:
                    await reply.read()
                    if reply.status != 200:
                        raise RuntimeError(f"session {session} turn {turn}: {reply.status}")

    async with aiohttp.ClientSession() as http:
        await asyncio.gather(*(one(n, http) for n in range(sessions)))


def measure(mode: str, sessions: int, turns: int, idle: float) -> Memory:
    loop = new_loop()
    try:
        with mock_and_gateway(mode) as processes:
            url = processes.gateway_url + ROUTE
            loop.run_until_complete(wait_ready(url, body(-1, 1)))
            start = rss_mb(processes.gateway_pid) or 0.0
            loop.run_until_complete(_play(url, sessions, turns, mode))
            after = rss_mb(processes.gateway_pid) or 0.0
            loop.run_until_complete(asyncio.sleep(idle))
            rested = rss_mb(processes.gateway_pid) or 0.0
    finally:
        loop.close()
    return Memory(mode, sessions, turns, start, after, rested)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=20, help="turns per session")
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "off", "paper"])
    parser.add_argument("--idle", type=float, default=5.0, help="seconds idle before the last")
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.turns < 1:
        parser.error("--sessions and --turns must be at least 1")
    got = measure(args.mode, args.sessions, args.turns, args.idle)
    print(
        f"skillstate {__version__}, mode {got.mode}: RSS {got.start_mb:.1f} MB at start, "
        f"{got.after_mb:.1f} MB after {got.sessions} sessions of {got.turns} turns, "
        f"{got.idle_mb:.1f} MB after {args.idle:g} s idle"
    )


if __name__ == "__main__":
    main()
