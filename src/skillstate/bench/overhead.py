"""Gateway overhead: requests/s and added latency against going direct, in one run.

Three processes share the machine: a minimal mock provider, the gateway in front of it (all
state lanes off), and this load generator. Each arm runs the same requests at concurrency 1
and 64, plain and streaming; rounds alternate between direct and gateway so that drift in the
machine's load hits both alike. Reported: requests/s, p50/p99 of the whole request, p50/p99
of time to first byte for streams, the added p50/p99 (gateway minus direct), and the
gateway's resident memory.

Run: ``python -m skillstate.bench.overhead [--seconds S] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from pathlib import Path

from skillstate import __version__
from skillstate.bench.harness import mock_and_gateway, rss_mb, wait_ready
from skillstate.bench.load import Row, Sample, load, row
from skillstate.support.eventloop import new_loop

_SYSTEM = "You are a careful coding agent. Answer briefly. " * 8
BODY = {  # the small request every arm sends
    "model": "bench-model",
    "messages": [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": "List the files in the project and say what each does."},
    ],
}


async def _measure(direct: str, gateway: str, seconds: float, rounds: int) -> list[Row]:
    rows: list[Row] = []
    for stream in (False, True):
        for concurrency in (1, 64):
            samples = {"direct": Sample(), "gateway": Sample()}
            body = json.dumps({**BODY, "stream": stream}).encode()
            await load(direct, body, concurrency, 0.3)  # warm both paths
            await load(gateway, body, concurrency, 0.3)
            for _ in range(rounds):
                for arm, url in (("direct", direct), ("gateway", gateway)):
                    samples[arm].extend(await load(url, body, concurrency, seconds / rounds))
            rows += [row(arm, stream, concurrency, s) for arm, s in samples.items()]
    return rows


def _print(rows: list[Row], rss: float | None) -> None:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    print(f"skillstate {__version__} gateway overhead (lanes off), {os.cpu_count()} cores")
    header = f"{'arm':8} {'mode':6} {'conc':>4} {'req':>6} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}"
    print(header + f" {'ttfb50':>8} {'ttfb99':>8}")
    for r in rows:
        mode = "stream" if r.stream else "plain"
        print(
            f"{r.arm:8} {mode:6} {r.concurrency:4d} {r.requests:6d} {r.rps:8.0f} "
            f"{r.p50_ms:8.3f} {r.p99_ms:8.3f} {ms(r.ttfb_p50_ms):>8} {ms(r.ttfb_p99_ms):>8}"
        )
    print("\nadded by the gateway (gateway minus direct, same run):")
    for i in range(0, len(rows), 2):
        d, g = rows[i], rows[i + 1]
        mode = "stream" if d.stream else "plain"
        line = (
            f"  {mode:6} c={d.concurrency:<3} p50 +{g.p50_ms - d.p50_ms:.3f} ms, "
            f"p99 +{g.p99_ms - d.p99_ms:.3f} ms, throughput {g.rps / d.rps:.2f}x of direct"
        )
        if d.ttfb_p50_ms is not None and g.ttfb_p50_ms is not None:
            line += f", ttfb p50 +{g.ttfb_p50_ms - d.ttfb_p50_ms:.3f} ms"
        print(line)
    if rss is not None:
        print(f"gateway RSS after the run: {rss:.1f} MB")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="load time per cell and arm")
    parser.add_argument("--rounds", type=int, default=4, help="alternations of direct/gateway")
    parser.add_argument("--json", type=Path, help="also write the rows here as JSON")
    args = parser.parse_args(argv)
    loop = new_loop()
    try:
        with mock_and_gateway("off") as processes:
            direct = processes.mock_url + "/v1/chat/completions"
            through = processes.gateway_url + "/v1/chat/completions"
            loop.run_until_complete(wait_ready(direct, BODY))
            loop.run_until_complete(wait_ready(through, BODY))
            rows = loop.run_until_complete(_measure(direct, through, args.seconds, args.rounds))
            rss = rss_mb(processes.gateway_pid)
    finally:
        loop.close()
    _print(rows, rss)
    if args.json:
        args.json.write_text(
            json.dumps({"rows": [asdict(r) for r in rows], "rss_mb": rss}, indent=2)
        )


if __name__ == "__main__":
    main()
