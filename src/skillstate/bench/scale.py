"""Throughput and added latency against the number of gateway processes (``--workers``), on
the embedded store (SQLite under the data directory) and on the shared one (PostgreSQL, with
Redis beside it), in one run (docs/BENCHMARKS.md, "Several processes").

The mock provider and the gateway run as processes of their own (``harness``); this process
generates the load: ``--concurrency`` clients, each its own session, post a hybrid request
with tools, Σ offered from the first request (``FULL_PATH``: every request reads and commits
its session's record in the store), for
``--seconds`` per cell, after a warm-up. Reported per cell: requests/s, p50 and p99 of the
whole request, p50 added over the provider alone (``direct``), and the gateway's CPU per
request (the supervisor and its workers together). Quote ratios from one run: the machine is
shared and noisy, and on a machine with two cores the load generator takes one of them.

Run: ``python -m skillstate.bench.scale [--workers 1,2,4] [--stores sqlite,postgresql]
[--seconds 5] [--concurrency 32]``. PostgreSQL: a scratch database on
``SKILLSTATE_TEST_POSTGRES``'s server (``testing.postgres``), dropped at exit; Redis at
``--redis`` (default ``redis://127.0.0.1:6379/0``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence

from skillstate.bench.harness import cpu_seconds, mock_provider, serving, wait_ready
from skillstate.bench.load import Row, load, row
from skillstate.support.eventloop import new_loop

BODY = {
    "model": "bench-model",
    "messages": [
        {"role": "system", "content": "You are a careful coding agent. " * 8},
        {"role": "user", "content": "List the files in the project and say what each does."},
    ],
    "tools": [
        {
            "type": "function",
            "function": {"name": "shell", "parameters": {"type": "object", "properties": {}}},
        }
    ],
}
CHAT = "/v1/chat/completions"
FULL_PATH = {"SKILLSTATE_COLLAPSE": json.dumps({"passthrough_until_boundary": False})}
"""Every request takes the state lane's full path (Σ offered from the first request), so
each reads and commits its session's record: the store is on every request's path."""


async def measure(
    workers: Sequence[int], stores: Sequence[str], seconds: float, concurrency: int, redis: str
) -> list[Row]:
    body = json.dumps(BODY).encode()

    def sessions(worker: int) -> dict[str, str]:
        return {"x-skillstate-session": f"scale-{worker}"}

    rows = []
    with mock_provider() as mock:
        await wait_ready(mock + CHAT, BODY)
        await load(mock + CHAT, body, concurrency, 0.5)
        rows.append(
            row("direct", False, concurrency, await load(mock + CHAT, body, concurrency, seconds))
        )
        for store in stores:
            extra: list[str] = []
            if store == "postgresql":
                from skillstate.testing import postgres

                extra = ["--store", postgres.dsn(), "--redis", redis]
            for count in workers:
                args = ["--workers", str(count), "--upstream", mock, "--upstream-profile", "openai"]
                async with serving(*args, "--mode", "hybrid", *extra, env=FULL_PATH) as server:
                    url = server.url + CHAT
                    await load(url, body, concurrency, 1.0, headers=sessions, at_least=2)
                    before = cpu_seconds(server.process.pid)
                    sample = await load(url, body, concurrency, seconds, headers=sessions)
                    after = cpu_seconds(server.process.pid)
                    cpu = after - before if after is not None and before is not None else None
                    rows.append(row(f"{store} x{count}", False, concurrency, sample, cpu))
    return rows


def _print(rows: Sequence[Row]) -> None:
    direct = rows[0].p50_ms
    print(f"{'arm':<16}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'+p50 ms':>9}{'cpu ms/req':>12}")
    for each in rows:
        added = each.p50_ms - direct if each.arm != "direct" else 0.0
        cpu = f"{each.cpu_ms:.2f}" if each.cpu_ms is not None else "-"
        print(
            f"{each.arm:<16}{each.rps:>9.0f}{each.p50_ms:>9.2f}{each.p99_ms:>9.2f}"
            f"{added:>9.2f}{cpu:>12}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args(argv)
    workers = [int(n) for n in args.workers.split(",")]
    stores = [s for s in args.stores.split(",") if s]
    for store in stores:
        if store not in ("sqlite", "postgresql"):
            parser.error(f"--stores: {store!r} is neither sqlite nor postgresql")
    with asyncio.Runner(loop_factory=new_loop) as runner:
        rows = runner.run(measure(workers, stores, args.seconds, args.concurrency, args.redis))
    _print(rows)


if __name__ == "__main__":
    main()
