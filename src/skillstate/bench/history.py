"""Issue 11's history curve: the gateway's CPU per request as a session's history grows, beside
what ``orjson.loads`` of that request's body alone costs.

The gateway runs as a user starts it (``skillstate serve --mode MODE``) in front of the mock
provider, which answers every request at once with a fixed completion. For each mode, one
session (``x-skillstate-session: history-MODE``, ``x-skillstate-mode: MODE``) plays a Chat
Completions tool loop built here, client-side: a system prompt, a user task, then per turn an
assistant message with one ``read_file`` tool call (a unique id) and its ``tool`` message, a
source file of about 2.8 KB unique to that turn. The request of turn ``n`` carries turns
1..n, so the history only grows (append-only, as an agent sends it): 10 turns are about
28 KB, 100 turns 284 KB, 1,000 turns 2.8 MB. Every turn 1..max is sent in order,
non-streamed; between the measured points the turns are only sent.

At each measured turn count the gateway's CPU time (user + system of all its threads, read
from ``/proc/PID/task/*/schedstat`` in nanoseconds; ``/proc/PID/stat``'s 10 ms ticks are too
coarse for a request of a few milliseconds) is taken before the request and again once the
reply has come back and the gateway's CPU has stopped moving (work it does just after
answering counts). At each point ``--repeat`` consecutive turns are measured (turn ``n``
and the ones after it, each a real next turn: a re-sent body would be a client's retry, which
the state lane answers more cheaply), and the median is reported. ``orjson.loads`` of turn
``n``'s body is timed in this process (its thread's CPU time, the median of a few runs): the
floor of any gateway that reads the body at all. The ratio says how many such reads the
gateway's whole handling of the request costs.

Run: ``python -m skillstate.bench.history [--turns 10,100,300,1000] [--modes hybrid,off]
[--repeat 3] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from skillstate import __version__
from skillstate.bench.harness import mock_and_gateway, wait_ready
from skillstate.support import jsonio
from skillstate.support.eventloop import new_loop

ROUTE = "/v1/chat/completions"
ROUTES = {"chat": ROUTE, "messages": "/v1/messages", "responses": "/v1/responses"}
"""The wires the curve can be run on (``--wires``), and their routes."""

LOADS_RUNS = 7

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the project.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def file_text(turn: int) -> str:
    """The file turn ``turn`` reads: about 2.5 KB of Python source unique to that turn."""
    lines = [f'"""Module {turn} of the project: helpers for stage {turn}."""', ""]
    for i in range(16):
        lines += [
            f"def stage_{turn}_step_{i}(value: int, scale: int = {i + 1}) -> int:",
            f'    """Step {i} of stage {turn}: scale it, then offset it."""',
            f"    return value * scale + {turn * 31 + i}",
            "",
        ]
    return "\n".join(lines)


def turn_messages(turn: int) -> list[dict[str, Any]]:
    """Turn ``turn`` of the loop: the assistant's ``read_file`` call and the tool's answer."""
    call_id = f"call_{turn:05d}"
    arguments = json.dumps({"path": f"src/project/stage_{turn}.py"})
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "read_file", "arguments": arguments},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": file_text(turn)},
    ]


def turn_items(wire: str, turn: int) -> list[dict[str, Any]]:
    """Turn ``turn`` of the loop in ``wire``'s shape: the same call and file as
    ``turn_messages``."""
    if wire == "chat":
        return turn_messages(turn)
    call_id = f"call_{turn:05d}"
    path = {"path": f"src/project/stage_{turn}.py"}
    if wire == "messages":
        use = {"type": "tool_use", "id": call_id, "name": "read_file", "input": path}
        result = {"type": "tool_result", "tool_use_id": call_id, "content": file_text(turn)}
        return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    call = {"type": "function_call", "call_id": call_id, "name": "read_file"}
    return [
        call | {"arguments": json.dumps(path)},
        {"type": "function_call_output", "call_id": call_id, "output": file_text(turn)},
    ]


class History:
    """A tool loop's history in one wire's shape, one turn appended at a time."""

    def __init__(self, wire: str = "chat") -> None:
        self.wire = wire
        self.turns = 0
        task = {
            "role": "user",
            "content": "Read the project's stages one by one and summarise them.",
        }
        self.messages: list[dict[str, Any]] = [task]
        if wire == "chat":
            self.messages.insert(0, {"role": "system", "content": SYSTEM})

    def advance(self) -> bytes:
        """Append the next turn; the body of the request that carries it."""
        self.turns += 1
        self.messages += turn_items(self.wire, self.turns)
        return self.body()

    def body(self) -> bytes:
        if self.wire == "messages":
            functions = [t["function"] for t in TOOLS]
            tools = [
                {
                    "name": f["name"],
                    "description": f["description"],
                    "input_schema": f["parameters"],
                }
                for f in functions
            ]
            value = {"model": "bench-model", "max_tokens": 1024, "system": SYSTEM}
            return jsonio.dumps(value | {"tools": tools, "messages": self.messages})
        if self.wire == "responses":
            tools = [{"type": "function", **t["function"]} for t in TOOLS]
            value = {"model": "bench-model", "instructions": SYSTEM, "tools": tools}
            return jsonio.dumps(value | {"input": self.messages})
        return jsonio.dumps({"model": "bench-model", "tools": TOOLS, "messages": self.messages})


SYSTEM = "You are a careful coding agent."


def _schedstat_seconds(pid: int) -> float:
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # a thread that just ended
    return total / 1e9


def _stat_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far, all threads, user + system: from ``schedstat`` (ns), or
    from ``stat`` (clock ticks) where the kernel keeps no ``schedstat``."""
    try:
        return _schedstat_seconds(pid)
    except OSError:
        return _stat_seconds(pid)


async def settled_cpu(pid: int, step: float = 0.02, limit: float = 2.0) -> float:
    """``cpu_seconds(pid)`` once two readings ``step`` apart agree (or ``limit`` has passed):
    what the process does just after answering is counted with the request."""
    deadline = time.monotonic() + limit
    last = cpu_seconds(pid)
    while time.monotonic() < deadline:
        await asyncio.sleep(step)
        now = cpu_seconds(pid)
        if now - last < 1e-4:  # 0.1 ms in 20 ms: idle
            return now
        last = now
    return last


def loads_ms(body: bytes, runs: int = LOADS_RUNS) -> float:
    """The median CPU time of ``orjson.loads(body)`` in this thread, in milliseconds: CPU time,
    as the gateway's figure is, so that another process taking the core does not count."""
    times = []
    for _ in range(runs):
        started = time.thread_time()
        orjson.loads(body)
        times.append(time.thread_time() - started)
    return statistics.median(times) * 1000


@dataclass(frozen=True, slots=True)
class Row:
    """One measured point of the curve."""

    mode: str
    turns: int
    body_bytes: int
    cpu_ms: float  # the gateway's CPU per request, median of the repeats
    cpu_samples_ms: tuple[float, ...]
    loads_ms: float
    wire: str = "chat"

    @property
    def ratio(self) -> float:
        return self.cpu_ms / self.loads_ms if self.loads_ms > 0 else float("inf")


async def _send(session: aiohttp.ClientSession, url: str, body: bytes, mode: str) -> None:
    headers = {
        "content-type": "application/json",
        "x-skillstate-session": f"history-{mode}",
        "x-skillstate-mode": mode,
    }
    async with session.post(url, data=body, headers=headers) as reply:
        await reply.read()
        if reply.status != 200:
            raise RuntimeError(f"turn request got {reply.status} from {url}")


async def _measured(
    session: aiohttp.ClientSession, url: str, pid: int, history: History, mode: str, repeat: int
) -> tuple[bytes, list[float]]:
    """The gateway's CPU (ms) for each of the next ``repeat`` turns of ``history``, each a
    real next turn (a re-sent body would be a retry, cheaper to the state lane), and the body
    of the first."""
    samples, first = [], b""
    for n in range(repeat):
        body = history.advance()
        first = first if n else body
        before = await settled_cpu(pid)
        await _send(session, url, body, mode)
        samples.append((await settled_cpu(pid) - before) * 1000)
    return first, samples


async def curve(
    mode: str, url: str, pid: int, turns: list[int], repeat: int, wire: str = "chat"
) -> list[Row]:
    """Play one session up to ``max(turns)``, measuring at each of ``turns``."""
    history = History(wire)
    probe = History(wire)
    await wait_ready(url, orjson.loads(probe.body()))
    points, rows = set(turns), []
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        while history.turns < max(turns):
            if history.turns + 1 not in points:
                await _send(session, url, history.advance(), mode)
                continue
            at = history.turns + 1
            body, samples = await _measured(session, url, pid, history, mode, repeat)
            median = statistics.median(samples)
            loads = loads_ms(body)
            rows.append(Row(mode, at, len(body), median, tuple(samples), loads, wire))
    return rows


def measure(
    modes: list[str], turns: list[int], repeat: int, wires: tuple[str, ...] = ("chat",)
) -> list[Row]:
    """The curve for each wire and mode, each against a gateway (and mock provider) of its
    own."""
    rows: list[Row] = []
    loop = new_loop()
    try:
        for wire in wires:
            for mode in modes:
                with mock_and_gateway(mode) as processes:
                    url = processes.gateway_url + ROUTES[wire]
                    rows += loop.run_until_complete(
                        curve(mode, url, processes.gateway_pid, sorted(turns), repeat, wire)
                    )
    finally:
        loop.close()
    return rows


def table(rows: list[Row]) -> str:
    lines = [
        f"{'wire':>9} {'turns':>6} {'body KB':>9} {'mode':>7} {'gateway CPU ms/req':>19} "
        f"{'orjson.loads ms':>16} {'CPU/loads':>10}"
    ]
    for row in rows:
        lines.append(
            f"{row.wire:>9} {row.turns:6d} {row.body_bytes / 1000:9.1f} {row.mode:>7} "
            f"{row.cpu_ms:19.2f} "
            f"{row.loads_ms:16.3f} {row.ratio:10.1f}"
        )
    return "\n".join(lines)


def _ints(text: str) -> list[int]:
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("turn counts are positive integers")
    return values


def _modes(text: str) -> list[str]:
    values = [part.strip() for part in text.split(",") if part.strip()]
    if not values or not set(values) <= {"off", "hybrid", "paper"}:
        raise argparse.ArgumentTypeError("modes are among off, hybrid, paper")
    return values


def _wires(text: str) -> tuple[str, ...]:
    values = tuple(part.strip() for part in text.split(",") if part.strip())
    if not values or not set(values) <= set(ROUTES):
        raise argparse.ArgumentTypeError(f"wires are among {', '.join(ROUTES)}")
    return values


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=_ints, default=[10, 100, 300, 1000], help="measured")
    parser.add_argument("--modes", type=_modes, default=["hybrid", "off"])
    parser.add_argument("--wires", type=_wires, default=("chat",), help="chat,messages,responses")
    parser.add_argument(
        "--repeat", type=int, default=3, help="consecutive turns measured at each point"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    rows = measure(args.modes, args.turns, args.repeat, args.wires)
    print(
        f"skillstate {__version__}: gateway CPU per request as one session's history grows "
        f"(median of {args.repeat}; orjson.loads median of {LOADS_RUNS}; {os.cpu_count()} cores)"
    )
    print(table(rows))
    if args.json is not None:
        out = [asdict(row) | {"ratio": row.ratio} for row in rows]
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
