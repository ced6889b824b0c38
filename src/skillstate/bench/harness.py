"""What the process benchmarks share: free ports, the mock provider and the gateway started as
a user would start them, readiness, percentiles and resident memory."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def wait_ready(url: str, body: Any, limit: float = 20.0) -> None:
    """Until a POST of ``body`` to ``url`` answers 200."""
    deadline = time.monotonic() + limit
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            try:
                async with session.post(url, json=body) as reply:
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
    mock_port, gw_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSTATE_")}
    env["PYTHONUNBUFFERED"] = "1"
    with tempfile.TemporaryDirectory(prefix="skillstate-bench-") as scratch:
        env["SKILLSTATE_DATA_DIR"] = scratch
        mock = subprocess.Popen(
            [sys.executable, "-m", "skillstate.bench.mock_provider", str(mock_port)]
        )
        command = [sys.executable, "-m", "skillstate", "serve", "--port", str(gw_port)]
        command += ["--upstream", f"http://127.0.0.1:{mock_port}", "--mode", mode]
        gateway = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        try:
            yield Processes(
                f"http://127.0.0.1:{mock_port}", f"http://127.0.0.1:{gw_port}", gateway.pid
            )
        finally:
            for proc in (gateway, mock):
                proc.terminate()
                proc.wait(timeout=10)
