"""The gateway under injected upstream faults: a bounded load test with the verdicts of issue 7.

The scripted upstream (in this process) answers each request normally or, with probability
``--rate``, with one fault of every kind it has: hang, slow, reset, malformed SSE, truncated
JSON, 500, 503, 529 and 429 with ``Retry-After``. The gateway runs as users start it (a
separate ``skillstate serve`` process, retries on). ``--clients`` concurrent clients mix the
three wires, JSON and streams, modes off, hybrid and paper (in paper the model patches Σ with a
key of its own each time, so a lost patch would show; hybrid's one-line conversations never
reach a boundary, so they pass through). Checked at the end:

* no gateway crash, no hung request (each client gives up after ``--request-timeout``);
* no 5xx made by the gateway other than 502/504 (an upstream's own 5xx, relayed after the
  retries were spent, is counted apart);
* every failed request got a well-formed error in its client's wire (an error body, or a
  stream that ends with the wire's error event);
* retryable faults were retried (the share of them that still reached a client is printed);
* every patch of a request that succeeded is in Σ;
* the gateway's RSS at the end is within 20% of its RSS after warm-up.

Run: ``python -m skillstate.bench.faults [--seconds 120] [--clients 64] [--rate 0.05]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from skillstate.bench.harness import rss_mb, serving, verdicts
from skillstate.bench.judge import WIRES, shoot
from skillstate.testing import Fault, RecordedRequest, Reply, ScriptedCall, ScriptedUpstream

FAULTS: list[Any] = [
    Fault.HANG,
    Fault.SLOW,
    Fault.RESET,
    Fault.MALFORMED_SSE,
    Fault.TRUNCATED_JSON,
    500,
    503,
    529,
    429,
]
RETRYABLE = {500, 503, 529, 429, Fault.RESET}


@dataclass
class Tally:
    ok: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    malformed: list[str] = field(default_factory=list)
    hung: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    patches: dict[str, set[str]] = field(default_factory=dict)
    asked: set[str] = field(default_factory=set)
    """Keys the model was made to patch (a faulty round patches nothing)."""


class Faulty:
    """The upstream's policy: mostly answers, sometimes fails in one of ``FAULTS``."""

    def __init__(self, rate: float, tally: Tally, seed: int) -> None:
        self.rate = rate
        self.tally = tally
        self.random = random.Random(seed)

    def __call__(self, request: RecordedRequest) -> Reply:
        fault = self.random.choice(FAULTS) if self.random.random() < self.rate else None
        if fault is not None:
            self.tally.faults[str(fault)] += 1
        if isinstance(fault, int):
            headers = {"retry-after-ms": "100"} if fault == 429 else {}
            return Reply.failure(fault, f"injected {fault}", headers=headers)
        if fault is not None and fault is not Fault.SLOW:
            return Reply(text="faulty answer", fault=fault)
        delay = 0.5 if fault is Fault.SLOW else 0.0
        raw = request.body.decode(errors="replace")
        patch = _patch_key(raw)
        if patch is not None and "state_patch" in raw:  # paper: the envelope carries it
            self.tally.asked.update(patch)
            envelope = {"state_patch": {"findings": patch}, "action": "noted"}
            return Reply(text=json.dumps(envelope), delay=delay)
        if patch is not None and "skill_state" in raw and "State updated" not in raw:
            self.tally.asked.update(patch)  # hybrid past its boundary: the tool carries it
            call = ScriptedCall("skill_state", {"patch": {"findings": patch}})
            return Reply(calls=[call], delay=delay)
        return Reply(text="fine answer from the scripted upstream", delay=delay)


def _patch_key(raw: str) -> dict[str, str] | None:
    """The patch a request asks for: its own key, from the task "Remember k-..."."""
    if "Remember k-" not in raw:
        return None
    start = raw.index("Remember k-") + len("Remember ")
    key = raw[start : raw.index(".", start)]
    return {key: "seen"}


async def _client(url: str, tally: Tally, stop: float, seed: int, request_timeout: float) -> None:
    rng = random.Random(seed)
    timeout = aiohttp.ClientTimeout(total=request_timeout)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        n = 0
        while time.monotonic() < stop:
            n += 1
            wire = rng.choice(list(WIRES))
            stream = rng.random() < 0.5
            mode = rng.choice(["off", "hybrid", "paper"])
            session_id = f"bench-{seed}"
            key = f"k-{seed}-{n}"
            headers = {"x-skillstate-session": session_id, "x-skillstate-mode": mode}
            shot = await shoot(session, url, wire, key, stream, headers)
            if shot.outcome == "hung":
                tally.hung += 1
            elif shot.outcome == "broken":
                tally.malformed.append(f"{wire}: {shot.error}")
            elif shot.outcome == "ok":
                tally.ok += 1
                if mode != "off":
                    tally.patches.setdefault(session_id, set()).add(key)
            else:
                tally.failed[str(shot.status)] += 1
                if shot.outcome in ("malformed", "truncated"):  # a 200 not whole: as bad
                    tally.malformed.append(shot.line())


async def _run(args: argparse.Namespace) -> int:
    tally = Tally()
    timeouts = {"SKILLSTATE_FIRST_BYTE_TIMEOUT": "3", "SKILLSTATE_STREAM_IDLE_TIMEOUT": "3"}
    async with (
        ScriptedUpstream(Faulty(args.rate, tally, args.seed)) as up,
        # The scripted upstream plays a hosted provider: the official profile (docs/upstreams.md).
        serving("--upstream", up.url, "--upstream-profile", "openai", env=timeouts) as gateway,
    ):
        url = gateway.url
        await asyncio.gather(*(_client(url, Tally(), time.monotonic() + 3, s, 30)
                               for s in range(4)))  # fmt: skip
        start_rss = rss_mb(gateway.process.pid)
        stop = time.monotonic() + args.seconds
        clients = [
            _client(url, tally, stop, 1000 + s, args.request_timeout) for s in range(args.clients)
        ]
        await asyncio.gather(*clients)
        end_rss = rss_mb(gateway.process.pid)
        lost = await _lost_patches(url, tally)
        alive = gateway.process.returncode is None
    return _report(args, tally, start_rss, end_rss, lost, alive)


async def _lost_patches(url: str, tally: Tally) -> int:
    lost = 0
    async with aiohttp.ClientSession() as session:
        for session_id, keys in tally.patches.items():
            async with session.get(f"{url}/state", params={"session": session_id}) as r:
                described = await r.json() if r.status == 200 else {}
            findings = (described.get("state") or {}).get("findings") or {}
            lost += len((keys & tally.asked) - set(findings))
    return lost


def _report(
    args: argparse.Namespace,
    tally: Tally,
    start_rss: float | None,
    end_rss: float | None,
    lost: int,
    alive: bool,
) -> int:
    total = tally.ok + sum(tally.failed.values()) + tally.hung + len(tally.malformed)
    injected = sum(tally.faults.values())
    retryable = sum(n for f, n in tally.faults.items() if f in {str(x) for x in RETRYABLE})
    gateway_5xx = {s: n for s, n in tally.failed.items() if s.startswith("5") and s not in
                   ("502", "503", "504", "529", "500")}  # fmt: skip
    growth = (end_rss / start_rss - 1) if start_rss and end_rss else 0.0
    print(f"skillstate fault load: {args.clients} clients, {args.seconds:g}s, rate {args.rate}")
    print(f"requests {total}, ok {tally.ok}, failed {dict(tally.failed)}, hung {tally.hung}")
    print(f"faults injected {injected} ({dict(tally.faults)}), retryable {retryable}")
    print(f"failures that reached a client: {sum(tally.failed.values())}")
    print(f"malformed replies: {len(tally.malformed)} {tally.malformed[:3]}")
    checked = sum(len(keys & tally.asked) for keys in tally.patches.values())
    print(f"patches checked {checked}, lost {lost}")
    rss = f"{start_rss:.1f} -> {end_rss:.1f} MB ({growth:+.0%})" if start_rss and end_rss else "?"
    print(f"gateway RSS {rss}; gateway alive at the end: {alive}")
    held = {
        "no crash": alive,
        "no hung request": tally.hung == 0,
        "no other gateway 5xx": not gateway_5xx,
        "every error well formed": not tally.malformed,
        "no lost patch (and some checked)": lost == 0 and checked > 0,
        "RSS within 20%": growth <= 0.20,
    }
    return verdicts(held)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--rate", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--request-timeout", type=float, default=60.0)
    sys.exit(asyncio.run(_run(parser.parse_args(argv))))


if __name__ == "__main__":
    main()
