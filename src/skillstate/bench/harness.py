"""What the process benchmarks share: free ports, the mock provider, the bare forwarder and the
gateway started as a user would start them, readiness, percentiles and resident memory."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def wait_ready(
    url: str,
    body: Any,
    limit: float = 20.0,
    headers: Mapping[str, str] | None = None,
    alive: Callable[[], bool] | None = None,
) -> None:
    """Until a POST of ``body`` to ``url`` answers 200; early if ``alive`` says the server
    process has ended."""
    deadline = time.monotonic() + limit
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if alive is not None and not alive():
                raise RuntimeError(f"the server for {url} exited before it answered")
            try:
                async with session.post(url, json=body, headers=headers) as reply:
                    await reply.read()
                    if reply.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up in {limit}s")


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (seconds), in milliseconds."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def rss_mb(pid: int, field: str = "VmRSS") -> float | None:
    """A process's resident memory (``VmHWM`` for its peak), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _stat_fields(path: Path) -> list[str] | None:
    """The fields of a ``/proc/PID/stat`` after the command name (field 3 onwards)."""
    try:
        return path.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (a server's workers)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        fields = _stat_fields(stat)
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        pending += children.get(current, [])
    return found


def tree_rss_mb(pid: int) -> float | None:
    """The resident memory of a process and all its descendants (a server's workers), in MB."""
    total, seen = 0.0, False
    for current in _tree(pid):
        mb = rss_mb(current)
        if mb is not None:
            total, seen = total + mb, True
    return total if seen else None


_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system, as the kernel accounts it in ``/proc/PID/stat``) a
    process and all its descendants have used so far, in seconds; None when it is gone.
    The kernel counts in clock ticks (``SC_CLK_TCK``, usually 10 ms), so read it around
    a phase of at least some hundreds of milliseconds of CPU."""
    ticks, seen = 0, False
    for current in _tree(pid):
        fields = _stat_fields(Path(f"/proc/{current}/stat"))
        if fields is not None:
            # utime and stime are fields 14 and 15 of stat: 12 and 13 after the name.
            ticks, seen = ticks + int(fields[11]) + int(fields[12]), True
    return ticks / _TICKS_PER_S if seen else None


def bench_env() -> dict[str, str]:
    """This process's environment without any ``SKILLSTATE_`` setting, unbuffered."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSTATE_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate a child and wait for it; kill it if it will not go."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextlib.contextmanager
def mock_provider() -> Iterator[str]:
    """``skillstate.bench.mock_provider`` in a process of its own; yields its base URL."""
    port = free_port()
    mock = subprocess.Popen([sys.executable, "-m", "skillstate.bench.mock_provider", str(port)])
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(mock)


@dataclass(frozen=True, slots=True)
class Server:
    """A server started as a child process: its base URL and process id."""

    url: str
    pid: int


@contextlib.contextmanager
def gateway(mode: str, upstream: str, flags: Sequence[str] = ()) -> Iterator[Server]:
    """``skillstate serve --mode MODE --upstream UPSTREAM`` and ``flags``, as a user starts it,
    with a scratch data directory, stopped on exit."""
    port = free_port()
    env = bench_env()
    with tempfile.TemporaryDirectory(prefix="skillstate-bench-") as scratch:
        env["SKILLSTATE_DATA_DIR"] = scratch
        command = [sys.executable, "-m", "skillstate", "serve", "--port", str(port)]
        # The benchmarks' providers imitate the official ones (docs/upstreams.md).
        command += ["--upstream", upstream, "--upstream-profile", "openai", "--mode", mode]
        command += flags
        proc = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        try:
            yield Server(f"http://127.0.0.1:{port}", proc.pid)
        finally:
            stop(proc)


@contextlib.contextmanager
def forwarder(upstream: str) -> Iterator[Server]:
    """``skillstate.bench.forwarder`` (the bare aiohttp forwarder, the floor for a Python proxy)
    in front of ``upstream``, in a process of its own, stopped on exit."""
    port = free_port()
    command = [sys.executable, "-m", "skillstate.bench.forwarder", "--port", str(port)]
    command += ["--upstream", upstream]
    proc = subprocess.Popen(command, env=bench_env(), stderr=subprocess.DEVNULL)
    try:
        yield Server(f"http://127.0.0.1:{port}", proc.pid)
    finally:
        stop(proc)


@dataclass(slots=True)
class Serving:
    """A gateway started by ``serving``: its base URL and its process (``returncode`` is None
    while it runs)."""

    url: str
    process: asyncio.subprocess.Process


@contextlib.asynccontextmanager
async def serving(*args: str, env: Mapping[str, str] | None = None) -> AsyncIterator[Serving]:
    """``skillstate serve ARGS --port P`` in a child process with a scratch data directory and
    ``env`` over ``bench_env()``, once its ``/health`` answers; stopped on exit."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="skillstate-bench-") as scratch:
        environ = {**bench_env(), "SKILLSTATE_DATA_DIR": scratch, **(env or {})}
        command = [sys.executable, "-m", "skillstate", "serve", *args, "--port", str(port)]
        process = await asyncio.create_subprocess_exec(
            *command, env=environ, stderr=asyncio.subprocess.DEVNULL
        )
        url = f"http://127.0.0.1:{port}"
        try:
            await healthy(url, alive=lambda: process.returncode is None)
            yield Serving(url, process)
        finally:
            if process.returncode is None:
                process.terminate()
            await process.wait()


async def healthy(url: str, alive: Callable[[], bool], limit: float = 30.0) -> None:
    """Once the gateway at ``url`` answers ``/health`` with 200; ``RuntimeError`` when it is
    no longer ``alive`` or not up in ``limit`` seconds (a loaded machine starts slowly)."""
    deadline = time.monotonic() + limit
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if not alive():
                raise RuntimeError(f"the gateway for {url} exited before it answered")
            try:
                async with session.get(url + "/health") as reply:
                    if reply.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up in {limit}s")


def verdicts(held: Mapping[str, bool]) -> int:
    """Print each verdict (``ok`` or ``FAIL``); the exit status: 0 when all held."""
    for name, ok in held.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    return 0 if all(held.values()) else 1


@dataclass(frozen=True, slots=True)
class Processes:
    """The mock provider and the gateway in front of it, as child processes."""

    mock_url: str
    gateway_url: str
    gateway_pid: int


@contextlib.contextmanager
def mock_and_gateway(mode: str) -> Iterator[Processes]:
    """``skillstate serve --mode MODE`` in front of ``skillstate.bench.mock_provider``, each in
    its own process (the gateway with a scratch data directory), stopped on exit."""
    with mock_provider() as mock, gateway(mode, mock) as server:
        yield Processes(mock, server.url, server.pid)
