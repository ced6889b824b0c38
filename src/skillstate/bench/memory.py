"""Issue 11's memory figure: the gateway's resident memory after many sessions.

The gateway runs as a user starts it (``skillstate serve --mode MODE``) in front of the mock
provider. ``--sessions`` sessions (eight at a time) each play ``--turns`` turns of the history
benchmark's Chat tool loop (``bench.history``: one ``read_file`` call and a ~2.8 KB result a
turn, the history re-sent whole on every request). Reported: the gateway's RSS once it
answers, after the sessions, and again after ``--idle`` seconds with nothing to do (what
stays).

With ``--soak SECONDS`` it measures instead whether the gateway's memory stays flat while it
serves: one session plays the history benchmark's append-only tool loop (``bench.history``'s
``History``, one request after another), and when the body passes ``RESTART_BYTES`` (about
1 MB, 350 turns) a fresh session starts over, so it can run for as long as asked. Once warm
(after ``--warm`` seconds) the gateway's RSS is sampled every ``--every`` seconds; reported are
the samples and their max/min ratio (flat: at most ``FLAT``).

Run: ``python -m skillstate.bench.memory [--sessions 1000] [--turns 20] [--mode hybrid]``, or
``python -m skillstate.bench.memory --soak 600 [--warm 30] [--every 10] [--mode hybrid]``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from skillstate import __version__
from skillstate.bench.harness import mock_and_gateway, rss_mb, wait_ready
from skillstate.bench.history import ROUTE, TOOLS, History, turn_messages
from skillstate.support.eventloop import new_loop

AT_ONCE = 8
RESTART_BYTES = 1_000_000
"""A soak's session starts over once its request body is larger than this."""
FLAT = 1.05
"""A soak is flat when its largest RSS sample is at most this times its smallest."""


@dataclass(frozen=True, slots=True)
class Memory:
    """RSS in MB: once the gateway answers, after the sessions, after the idle wait."""

    mode: str
    sessions: int
    turns: int
    start_mb: float
    after_mb: float
    idle_mb: float


@dataclass(frozen=True, slots=True)
class Soak:
    """RSS in MB sampled while one long session (restarted when large) is served."""

    mode: str
    seconds: float
    requests: int
    sessions: int
    samples_mb: tuple[float, ...]

    @property
    def ratio(self) -> float:
        """The largest sample over the smallest (1.0 with fewer than two)."""
        if len(self.samples_mb) < 2 or min(self.samples_mb) <= 0:
            return 1.0
        return max(self.samples_mb) / min(self.samples_mb)

    @property
    def flat(self) -> bool:
        return self.ratio <= FLAT


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


@dataclass
class _Soaker:
    """One soak's client: the session it plays, and what it has sent so far."""

    url: str
    mode: str
    history: History
    sessions: int = 1
    requests: int = 0

    def next_body(self) -> tuple[bytes, dict[str, str]]:
        sent = self.history.advance()
        if len(sent) > RESTART_BYTES:
            self.history, self.sessions = History(), self.sessions + 1
            sent = self.history.advance()
        headers = {
            "content-type": "application/json",
            "x-skillstate-session": f"soak-{self.sessions}",
            "x-skillstate-mode": self.mode,
        }
        return sent, headers

    async def send(self, http: aiohttp.ClientSession) -> None:
        sent, headers = self.next_body()
        async with http.post(self.url, data=sent, headers=headers) as reply:
            await reply.read()
            if reply.status != 200:
                raise RuntimeError(f"soak request {self.requests + 1}: {reply.status}")
        self.requests += 1


async def _soak(url: str, pid: int, mode: str, seconds: float, warm: float, every: float) -> Soak:
    soaker = _Soaker(url, mode, History())
    samples: list[float] = []
    started = time.monotonic()
    due = started + warm
    async with aiohttp.ClientSession() as http:
        while (now := time.monotonic()) - started < seconds:
            if now >= due:
                samples.append(rss_mb(pid) or 0.0)
                due = now + every
            await soaker.send(http)
    samples.append(rss_mb(pid) or 0.0)
    return Soak(mode, seconds, soaker.requests, soaker.sessions, tuple(samples))


def soak(mode: str, seconds: float, warm: float = 30.0, every: float = 10.0) -> Soak:
    """The gateway's RSS sampled every ``every`` seconds after ``warm``, for ``seconds`` of one
    long session's requests sent back to back."""
    loop = new_loop()
    try:
        with mock_and_gateway(mode) as processes:
            url = processes.gateway_url + ROUTE
            loop.run_until_complete(wait_ready(url, body(-1, 1)))
            got = _soak(url, processes.gateway_pid, mode, seconds, warm, every)
            return loop.run_until_complete(got)
    finally:
        loop.close()


def _print_soak(got: Soak) -> None:
    samples = ", ".join(f"{mb:.1f}" for mb in got.samples_mb)
    verdict = "flat" if got.flat else "not flat"
    print(
        f"skillstate {__version__}, mode {got.mode}: soak of {got.seconds:g} s, "
        f"{got.requests} requests in {got.sessions} sessions; RSS MB once warm: {samples}; "
        f"max/min {got.ratio:.3f} ({verdict}, at most {FLAT:g})"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=20, help="turns per session")
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "off", "paper"])
    parser.add_argument("--idle", type=float, default=5.0, help="seconds idle before the last")
    parser.add_argument("--soak", type=float, help="play one long session this many seconds")
    parser.add_argument("--warm", type=float, default=30.0, help="soak seconds before sampling")
    parser.add_argument("--every", type=float, default=10.0, help="soak seconds between samples")
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.turns < 1:
        parser.error("--sessions and --turns must be at least 1")
    if args.soak is not None:
        if args.soak <= 0 or args.warm < 0 or args.every <= 0:
            parser.error("--soak and --every must be positive, --warm not negative")
        _print_soak(soak(args.mode, args.soak, args.warm, args.every))
        return
    got = measure(args.mode, args.sessions, args.turns, args.idle)
    print(
        f"skillstate {__version__}, mode {got.mode}: RSS {got.start_mb:.1f} MB at start, "
        f"{got.after_mb:.1f} MB after {got.sessions} sessions of {got.turns} turns, "
        f"{got.idle_mb:.1f} MB after {args.idle:g} s idle"
    )


if __name__ == "__main__":
    main()
