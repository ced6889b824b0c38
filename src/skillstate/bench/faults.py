"""The gateway under injected upstream faults: a bounded load test with the verdicts of issue 7.

The scripted upstream (in this process) answers each request normally or, with probability
``--rate``, with one fault of every kind it has: hang, slow, reset, malformed SSE, truncated
JSON, 500, 503, 529 and 429 with ``Retry-After``. The gateway runs as users start it (a
separate ``skillstate serve`` process, retries on). ``--clients`` concurrent clients mix the
three wires, JSON and streams, mode off and hybrid (where the model patches Σ with a key of its
own each time, so a lost patch would show). Checked at the end:

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
import os
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from skillstate.bench.harness import free_port, rss_mb
from skillstate.testing import Fault, RecordedRequest, Reply, ScriptedCall, ScriptedUpstream

WIRES = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "messages": "/v1/messages",
}
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
TOOL = {"type": "object", "properties": {"k": {"type": "string"}}}


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
        patch = _patch_key(request)
        if patch is not None:
            self.tally.asked.update(patch)
            call = ScriptedCall("skill_state", {"patch": {"findings": patch}})
            return Reply(calls=[call], delay=delay)
        return Reply(text="fine answer from the scripted upstream", delay=delay)


def _patch_key(request: RecordedRequest) -> dict[str, str] | None:
    """A hybrid request's first round asks for a patch naming the request's own key."""
    raw = request.body.decode(errors="replace")
    if "skill_state" not in raw or "Remember k-" not in raw or "State updated" in raw:
        return None
    start = raw.index("Remember k-") + len("Remember ")
    key = raw[start : raw.index(".", start)]
    return {key: "seen"}


def _body(wire: str, key: str, stream: bool) -> dict[str, Any]:
    text = f"Remember {key}."
    if wire == "chat":
        tools: list[Any] = [{"type": "function", "function": {"name": "look", "parameters": TOOL}}]
        return {"model": "m", "stream": stream, "messages": [{"role": "user", "content": text}],
                "tools": tools}  # fmt: skip
    if wire == "responses":
        tools = [{"type": "function", "name": "look", "parameters": TOOL}]
        return {"model": "m", "stream": stream, "input": text, "tools": tools}
    tools = [{"name": "look", "input_schema": TOOL}]
    return {"model": "m", "max_tokens": 64, "stream": stream, "tools": tools,
            "messages": [{"role": "user", "content": text}]}  # fmt: skip


async def _client(url: str, tally: Tally, stop: float, seed: int, request_timeout: float) -> None:
    rng = random.Random(seed)
    timeout = aiohttp.ClientTimeout(total=request_timeout)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        n = 0
        while time.monotonic() < stop:
            n += 1
            wire = rng.choice(list(WIRES))
            stream = rng.random() < 0.5
            mode = rng.choice(["off", "hybrid"])
            session_id = f"bench-{seed}"
            key = f"k-{seed}-{n}"
            headers = {"x-skillstate-session": session_id, "x-skillstate-mode": mode}
            if wire == "messages":
                headers["anthropic-version"] = "2023-06-01"
            body = _body(wire, key, stream)
            try:
                async with session.post(url + WIRES[wire], json=body, headers=headers) as r:
                    raw = await r.read()
                    status = r.status
            except TimeoutError:
                tally.hung += 1
                continue
            except aiohttp.ClientError as exc:
                tally.malformed.append(f"{wire}: {type(exc).__name__}: {exc}")
                continue
            outcome = whole(wire, status, stream, raw)
            if outcome == "ok":
                tally.ok += 1
                if mode == "hybrid":
                    tally.patches.setdefault(session_id, set()).add(key)
                continue
            tally.failed[str(status)] += 1
            if outcome in ("malformed", "truncated"):  # a 200 that is not whole: as bad
                tally.malformed.append(f"{wire} {status}: {raw[-200:]!r}")


def whole(wire: str, status: int, stream: bool, raw: bytes) -> str:
    """``ok``, ``failed`` (a well-formed error in the client's wire), ``truncated`` (a 200 that
    is not a whole reply) or ``malformed`` (an error that is not the wire's)."""
    if status != 200:
        try:
            body = json.loads(raw)
        except ValueError:
            return "malformed"
        error = body.get("error") if isinstance(body, dict) else None
        return "failed" if isinstance(error, dict) else "malformed"
    if not stream:
        try:
            body = json.loads(raw)
        except ValueError:
            return "truncated"
        return "ok" if _complete(wire, body) else "truncated"
    text = raw.decode(errors="replace").replace(" ", "")
    if wire == "chat":
        if '"error":{' in text:
            return "failed"
        done = text.rstrip().endswith("data:[DONE]") and '"finish_reason":"' in text
        return "ok" if done else "truncated"
    if wire == "messages":
        if "event:error" in text:
            return "failed"
        return "ok" if "event:message_stop" in text else "truncated"
    if '"type":"error"' in text or "response.failed" in text:
        return "failed"
    return "ok" if "response.completed" in text or "response.incomplete" in text else "truncated"


def _complete(wire: str, body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    if wire == "chat":
        choices = body.get("choices") or [{}]
        return bool(choices[0].get("finish_reason"))
    if wire == "messages":
        return bool(body.get("stop_reason"))
    return body.get("status") in ("completed", "incomplete")


async def _run(args: argparse.Namespace) -> int:
    tally = Tally()
    data = Path(tempfile.mkdtemp(prefix="skillstate-faults-"))
    async with ScriptedUpstream(Faulty(args.rate, tally, args.seed)) as up:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSTATE_")}
        env.update(SKILLSTATE_DATA_DIR=str(data), SKILLSTATE_FIRST_BYTE_TIMEOUT="3",
                   SKILLSTATE_STREAM_IDLE_TIMEOUT="3")  # fmt: skip
        gateway = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "skillstate", "serve", "--upstream", up.url,
            "--port", str(port), env=env, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            await _wait_ready(url)
            await asyncio.gather(*(_client(url, Tally(), time.monotonic() + 3, s, 30)
                                   for s in range(4)))  # fmt: skip
            start_rss = rss_mb(gateway.pid)
            stop = time.monotonic() + args.seconds
            clients = [
                _client(url, tally, stop, 1000 + s, args.request_timeout)
                for s in range(args.clients)
            ]
            await asyncio.gather(*clients)
            end_rss = rss_mb(gateway.pid)
            lost = await _lost_patches(url, tally)
            alive = gateway.returncode is None
        finally:
            gateway.terminate()
            await gateway.wait()
    return _report(args, tally, start_rss, end_rss, lost, alive)


async def _wait_ready(url: str, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            try:
                async with session.get(url + "/health") as reply:
                    if reply.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up in {limit}s")


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
    verdicts = {
        "no crash": alive,
        "no hung request": tally.hung == 0,
        "no other gateway 5xx": not gateway_5xx,
        "every error well formed": not tally.malformed,
        "no lost patch": lost == 0,
        "RSS within 20%": growth <= 0.20,
    }
    for name, held in verdicts.items():
        print(f"  {'ok  ' if held else 'FAIL'} {name}")
    return 0 if all(verdicts.values()) else 1


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
