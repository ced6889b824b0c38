"""Gateway overhead against a peer: one run, one mock upstream, one load generator, five arms.

- ``direct``: the mock provider itself (the baseline every other arm is compared with);
- ``forwarder``: ``skillstate.bench.forwarder``, a bare aiohttp server relaying raw bodies (the
  floor for a Python proxy: what ``off`` adds over it is what skillstate itself costs);
- ``off``: ``skillstate serve --mode off`` (lanes off: what the gateway costs as a proxy);
- ``hybrid``: ``skillstate serve --mode hybrid``: on the long session the state lane's real
  cost, on the short request a session before its first boundary (which should cost as off);
- ``litellm``: LiteLLM's proxy (``litellm_proxy``), where ``make peers`` installed it;
- ``otel-down`` (only when named): ``off`` with OpenTelemetry on, exporting to a port nobody
  listens on (docs/observability.md): a collector that is down must cost the requests nothing.

Two workloads: ``short``, the small request of ``skillstate.bench.overhead``, for every chosen
arm; and ``long``, a Chat request after ``turns`` tool steps of 3 KB file
reads, with its tool, which runs when ``hybrid`` is chosen, for every chosen arm (so that hybrid
is compared with going direct, with the bare forwarder, with pass-through and with the peer on
the same body). Each worker is a session of its own. Every cell (workload, plain or streamed,
concurrency 1 or 64) warms each arm, then alternates the arms for ``rounds`` rounds so that
drift in the machine's load hits them alike; each server's own CPU time (``/proc/PID/stat``)
is read around each of its load phases, for the CPU per request it served.
"""

from __future__ import annotations

import contextlib
import enum
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from skillstate.bench.harness import (
    Server,
    cpu_seconds,
    forwarder,
    free_port,
    gateway,
    mock_provider,
    tree_rss_mb,
    wait_ready,
)
from skillstate.bench.litellm_proxy import MASTER_KEY, Peer, installed_version, litellm_proxy
from skillstate.bench.load import Headers, Row, Sample, load, row
from skillstate.bench.overhead import BODY
from skillstate.bench.transform import session_request
from skillstate.conversation import Wire
from skillstate.protocols import adapter
from skillstate.support import jsonio
from skillstate.support.eventloop import new_loop

CONCURRENCY = (1, 64)
_PATH = "/v1/chat/completions"


class Arm(enum.StrEnum):
    DIRECT = "direct"
    FORWARDER = "forwarder"
    OFF = "off"
    HYBRID = "hybrid"
    LITELLM = "litellm"
    OTEL_DOWN = "otel-down"


_NAMED_ONLY = frozenset({Arm.OTEL_DOWN})
"""Arms run only when named."""


class Workload(enum.StrEnum):
    SHORT = "short"
    LONG = "long"


@dataclass(frozen=True, slots=True)
class Plan:
    """Which arms run, on which workloads, and what was left out and why."""

    arms: tuple[Arm, ...]
    workloads: tuple[Workload, ...]
    notes: tuple[str, ...] = ()

    def arms_for(self, workload: Workload) -> tuple[Arm, ...]:
        """Every arm runs on both workloads; on the short request hybrid is a session that
        never reaches its first boundary (what issue 28 wants to cost the same as off)."""
        return self.arms


def plan(chosen: Sequence[str], peer_version: str | None) -> Plan:
    """The arms ``chosen`` (all when none), in the order of ``Arm``, with ``direct`` always in
    (it is the baseline), and ``litellm`` left out, saying so, when it is not installed."""
    wanted = {Arm(name) for name in chosen} or set(Arm) - _NAMED_ONLY
    notes: list[str] = []
    if Arm.DIRECT not in wanted:
        wanted.add(Arm.DIRECT)
        notes.append("direct runs too: it is the baseline every other arm is compared with")
    if Arm.LITELLM in wanted and peer_version is None:
        wanted.discard(Arm.LITELLM)
        notes.append(
            "LiteLLM's proxy is not installed (`make peers` installs it into "
            ".cache/peers/litellm-venv); running the other arms without it"
        )
    arms = tuple(arm for arm in Arm if arm in wanted)
    workloads = (Workload.SHORT, Workload.LONG) if Arm.HYBRID in arms else (Workload.SHORT,)
    return Plan(arms, workloads, tuple(notes))


@dataclass(frozen=True, slots=True)
class Cell:
    workload: Workload
    row: Row


@dataclass(slots=True)
class Report:
    """What one run measured, and what to say beside it."""

    cells: list[Cell] = field(default_factory=list)
    rss_mb: dict[str, float | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    peer_version: str | None = None
    turns: int = 0
    long_kb: float = 0.0
    cores: int | None = os.cpu_count()

    def as_json(self) -> dict[str, Any]:
        return {
            "cells": [{"workload": c.workload.value, **asdict(c.row)} for c in self.cells],
            "rss_mb": self.rss_mb,
            "notes": self.notes,
            "litellm_version": self.peer_version,
            "turns": self.turns,
            "long_kb": self.long_kb,
            "cores": self.cores,
        }


def long_body(turns: int) -> dict[str, Any]:
    """The Chat body of a tool-loop session after ``turns`` steps, with its tool."""
    body: dict[str, Any] = adapter(Wire.CHAT).encode_request(session_request(turns))
    return body


def _headers(workload: Workload) -> Headers:
    def headers(worker: int) -> Mapping[str, str]:
        return {
            "authorization": f"Bearer {MASTER_KEY}",
            "x-skillstate-session": f"bench-{workload.value}-{worker}",
        }

    return headers


class _Cpu:
    """The CPU seconds each arm's server spends during its own load phases of one cell (read
    from the process's accounting before and after each phase, so the other arms' phases and
    the warm-up are left out); None for an arm without a process id or one that went away."""

    def __init__(self, pids: Mapping[Arm, int]) -> None:
        self._pids = pids
        self.spent: dict[Arm, float | None] = {arm: 0.0 for arm in pids}

    def read(self, arm: Arm) -> float | None:
        pid = self._pids.get(arm)
        return None if pid is None else cpu_seconds(pid)

    def add(self, arm: Arm, before: float | None, after: float | None) -> None:
        so_far = self.spent.get(arm)
        if so_far is None or before is None or after is None:
            self.spent[arm] = None
        else:
            self.spent[arm] = so_far + after - before


async def measure(
    the_plan: Plan,
    urls: Mapping[Arm, str],
    bodies: Mapping[Workload, dict[str, Any]],
    seconds: float,
    rounds: int,
    pids: Mapping[Arm, int] | None = None,
) -> list[Cell]:
    """Every cell of the plan: warm each arm, then ``rounds`` alternations of all of them; with
    ``pids``, each arm's server CPU per request over its load phases."""
    cells: list[Cell] = []
    for workload in the_plan.workloads:
        arms = the_plan.arms_for(workload)
        headers = _headers(workload)
        for stream in (False, True):
            body = jsonio.dumps({**bodies[workload], "stream": stream})
            for concurrency in CONCURRENCY:
                samples = {arm: Sample() for arm in arms}
                cpu = _Cpu({arm: pid for arm, pid in (pids or {}).items() if arm in arms})
                for arm in arms:
                    await load(urls[arm], body, concurrency, 0.3, headers, at_least=1)
                for _ in range(rounds):
                    for arm in arms:
                        before = cpu.read(arm)
                        got = await load(urls[arm], body, concurrency, seconds / rounds, headers)
                        cpu.add(arm, before, cpu.read(arm))
                        samples[arm].extend(got)
                cells += [
                    Cell(workload, row(arm.value, stream, concurrency, sample, cpu.spent.get(arm)))
                    for arm, sample in samples.items()
                ]
    return cells


async def probe(url: str, body: dict[str, Any]) -> str:
    """What the gateway said it did to one request of the long session (its lanes header)."""
    headers = dict(_headers(Workload.LONG)(0))
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json=body, headers=headers) as reply:
            sent = len(await reply.read())
            said = reply.headers.get("x-skillstate-lanes", "-")
            overhead = reply.headers.get("x-skillstate-overhead-ms", "-")
    return f"hybrid, one long-session request: lanes {said}; overhead {overhead} ms ({sent} B)"


@dataclass(slots=True)
class _Running:
    servers: dict[Arm, Server]
    peer: Peer | None = None


@contextlib.contextmanager
def _servers(the_plan: Plan, venv: Path, mock: str) -> Iterator[_Running]:
    with contextlib.ExitStack() as stack:
        running = _Running({Arm.DIRECT: Server(mock, 0)})
        if Arm.FORWARDER in the_plan.arms:
            running.servers[Arm.FORWARDER] = stack.enter_context(forwarder(mock))
        for arm in (Arm.OFF, Arm.HYBRID):
            if arm in the_plan.arms:
                running.servers[arm] = stack.enter_context(gateway(arm.value, mock))
        if Arm.OTEL_DOWN in the_plan.arms:
            nobody = ["--otel-endpoint", f"http://127.0.0.1:{free_port()}"]
            running.servers[Arm.OTEL_DOWN] = stack.enter_context(gateway("off", mock, nobody))
        if Arm.LITELLM in the_plan.arms:
            running.peer = stack.enter_context(litellm_proxy(venv, mock))
            running.servers[Arm.LITELLM] = running.peer.server
        yield running


async def _ready(running: _Running) -> None:
    headers = {"authorization": f"Bearer {MASTER_KEY}"}
    for arm, server in running.servers.items():
        if arm is Arm.LITELLM and running.peer is not None:
            peer = running.peer
            try:
                await wait_ready(server.url + _PATH, BODY, 180.0, headers, peer.alive)
            except RuntimeError as error:
                raise RuntimeError(f"{error}; its last output:\n{peer.log_tail()}") from error
        else:
            await wait_ready(server.url + _PATH, BODY, 60.0, headers)


def run(chosen: Sequence[str], venv: Path, seconds: float, rounds: int, turns: int) -> Report:
    """Start the mock, the gateways and the peer the plan needs, measure, stop them all."""
    version = installed_version(venv)
    the_plan = plan(chosen, version)
    report = Report(notes=list(the_plan.notes), peer_version=version, turns=turns)
    bodies = {Workload.SHORT: BODY, Workload.LONG: long_body(turns)}
    report.long_kb = len(jsonio.dumps(bodies[Workload.LONG])) / 1024
    loop = new_loop()
    try:
        with mock_provider() as mock, _servers(the_plan, venv, mock) as running:
            loop.run_until_complete(_ready(running))
            urls = {arm: server.url + _PATH for arm, server in running.servers.items()}
            if Arm.HYBRID in urls:
                long = bodies[Workload.LONG]
                loop.run_until_complete(probe(urls[Arm.HYBRID], long))  # seeds the session
                report.notes.append(loop.run_until_complete(probe(urls[Arm.HYBRID], long)))
            pids = {arm: server.pid for arm, server in running.servers.items() if server.pid}
            measured = measure(the_plan, urls, bodies, seconds, rounds, pids)
            report.cells = loop.run_until_complete(measured)
            for arm, server in running.servers.items():
                if arm is not Arm.DIRECT:
                    report.rss_mb[arm.value] = tree_rss_mb(server.pid)
            if running.peer is not None and not running.peer.alive():
                report.notes.append("LiteLLM's proxy had exited by the end of the run")
    finally:
        loop.close()
    return report
