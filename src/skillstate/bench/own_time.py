"""The gateway's own time per request, as it reports it: ``x-skillstate-overhead-ms`` (from
arrival to the reply, less the time spent waiting on the upstream), one request at a time.

Steadier on a shared machine than added latency (which carries the upstream's and the client's
noise too): the figure issue 28's request-path work is compared by, before and after a change.
The gateway (``skillstate serve --mode off``) runs in front of the mock provider; each arm sends
the benchmark's short request (``bench.overhead.BODY``) ``--requests`` times, the first fifth
as warm-up, and the arms alternate ``--rounds`` times. Arms: ``off`` and ``hybrid`` by
``x-skillstate-mode``, plain JSON; ``off-stream``, streamed; with ``--tools`` the request carries
the history benchmark's tools (for hybrid: a session before its first boundary that runs the
state lane, one session throughout).

Run: ``python -m skillstate.bench.own_time [--requests 2000] [--rounds 2] [--tools]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

import aiohttp

from skillstate.bench.harness import mock_and_gateway, percentile, wait_ready
from skillstate.bench.history import TOOLS
from skillstate.bench.overhead import BODY
from skillstate.support.eventloop import new_loop

ARMS: dict[str, tuple[str, bool]] = {
    "off": ("off", False),
    "off-stream": ("off", True),
    "hybrid": ("hybrid", False),
}
"""Arm -> (``x-skillstate-mode``, streamed)."""


async def own_times(url: str, body: dict[str, Any], mode: str, requests: int) -> list[float]:
    """The gateway's own milliseconds for each of ``requests`` sequential requests, the first
    fifth left out (warm-up)."""
    data = json.dumps(body).encode()
    headers = {"content-type": "application/json", "x-skillstate-mode": mode}
    times = []
    async with aiohttp.ClientSession() as http:
        for _ in range(requests):
            async with http.post(url, data=data, headers=headers) as reply:
                await reply.read()
                if reply.status != 200:
                    raise RuntimeError(f"{url} answered {reply.status}")
                times.append(float(reply.headers["x-skillstate-overhead-ms"]))
    return times[requests // 5 :]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="per arm and round")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the arms")
    parser.add_argument("--tools", action="store_true", help="the request carries tools")
    args = parser.parse_args(argv)
    body = {**BODY, "tools": TOOLS} if args.tools else dict(BODY)
    loop = new_loop()
    samples: dict[str, list[float]] = {arm: [] for arm in ARMS}
    try:
        with mock_and_gateway("off") as processes:
            url = processes.gateway_url + "/v1/chat/completions"
            loop.run_until_complete(wait_ready(url, BODY))
            for _ in range(args.rounds):
                for arm, (mode, stream) in ARMS.items():
                    sent = {**body, "stream": stream}
                    measured = own_times(url, sent, mode, args.requests)
                    samples[arm] += loop.run_until_complete(measured)
    finally:
        loop.close()
    tools = " with tools" if args.tools else ""
    print(f"the gateway's own time per request (x-skillstate-overhead-ms), c=1{tools}:")
    for arm, times in samples.items():
        median = statistics.median(times) * 1000
        p99 = percentile(times, 0.99)  # milliseconds in, times a thousand out: microseconds
        print(f"  {arm:10} median {median:6.0f} us  p99 {p99:6.0f} us")


if __name__ == "__main__":
    main()
