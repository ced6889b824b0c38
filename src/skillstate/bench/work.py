"""The Python work a request costs, counted: bytecode instructions run per request, by the
gateway and by the bare forwarder, in one process, so that a change to the request path is
judged by a number that does not move with the machine's load.

Timed figures on a shared machine move by a fifth from one run to the next, more than most
changes to the request path are worth; the number of bytecode instructions the event loop's
thread runs for a request is the same from run to run, busy machine or idle (to within a few
in ten thousand: the circuit breaker's counts by the second vary a little). So that it does
not move with the pace either, each request's ledger rows are written before the next request
(the recorder flushed): in use they are written in batches of whatever came in 50 ms, whose
cost per request shrinks as requests come faster; counted one batch per request, the figure
is the most a request's rows cost. Everything runs in this process on one event loop: the
mock provider, the gateway (``gateway.running``, mode off by
default), the bare forwarder (``bench.forwarder``) and a client that sends the benchmark's
short request (``bench.overhead.BODY``) to each in turn, one at a time. Each arm is counted
with ``sys.settrace`` opcode events over ``--requests`` requests after a warm-up; an arm's own
work is its count less the direct arm's (the client and the mock alone). Not counted: work on
threads started before the count (the database's: the ledger's rows are made there, see
``economics.ledger.recorder``) and work in C (orjson, the HTTP parsers, SQLite), which the
instructions that call it stand for.

Run: ``python -m skillstate.bench.work [--requests 300] [--stream] [--mode off|hybrid]
[--tools] [--top 20]``.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

import aiohttp

from skillstate.bench import forwarder, mock_provider
from skillstate.bench.history import TOOLS
from skillstate.bench.overhead import BODY
from skillstate.config import load_settings
from skillstate.economics.tokenizer import encoding
from skillstate.gateway import running
from skillstate.support.eventloop import new_loop
from skillstate.testing.loopback import on_loopback

Counts = collections.Counter[CodeType | str]
Trace = Callable[[FrameType, str, Any], Any]


def counting(counts: Counts) -> Trace:
    """A trace function that counts each frame's opcodes under its code object (a
    dataclass's generated methods under their class's name)."""

    def local(frame: FrameType, event: str, _: Any) -> Trace:
        if event == "opcode":
            code = frame.f_code
            if code.co_filename == "<string>":  # a dataclass's made method: its class says
                counts[f"{type(frame.f_locals.get('self')).__qualname__}.{code.co_name}"] += 1
            else:
                counts[code] += 1
        return local

    def tracer(frame: FrameType, event: str, _: Any) -> Trace:
        frame.f_trace_opcodes = True
        return local

    return tracer


async def measure(
    requests: int, body: bytes, mode: str, otel_endpoint: str = ""
) -> dict[str, Counts]:
    """Each arm's opcode counts over ``requests`` requests of ``body`` (``otel_endpoint``:
    traced to that collector; one nobody listens on is found down before counting starts)."""
    encoding()  # the gateway loads it at start: not a request's work
    counted: dict[str, Counts] = {}
    async with (
        on_loopback(mock_provider.build()) as upstream,
        on_loopback(forwarder.build(upstream)) as floor,
    ):
        environ = {"HOME": tempfile.mkdtemp(), "SKILLSTATE_DATA_DIR": tempfile.mkdtemp()}
        cli = {"upstream": upstream, "upstream_profile": "openai", "mode": mode}
        if otel_endpoint:
            cli["otel_endpoint"] = otel_endpoint
        settings = load_settings(cli=cli, environ=environ)
        async with running(settings, port=0) as gateway, aiohttp.ClientSession() as client:
            recorder = gateway.context.recorder
            assert recorder is not None
            bases = {"direct": upstream, "forwarder": floor, "gateway": gateway.url}

            async def one(base: str) -> None:
                url = base + "/v1/chat/completions"
                headers = {"content-type": "application/json"}
                async with client.post(url, data=body, headers=headers) as reply:
                    await reply.read()
                    if reply.status != 200:
                        raise RuntimeError(f"{base} answered {reply.status}")

            for arm, base in bases.items():
                for _ in range(max(20, requests // 5)):  # warm: pools, caches, first imports
                    await one(base)
                await recorder.flush()
                if gateway.context.telemetry is not None:
                    await gateway.context.telemetry.flush()  # what it was told so far went out
                counts: Counts = collections.Counter()
                trace = counting(counts)
                sys.settrace(trace)
                threading.settrace(trace)
                try:
                    for _ in range(requests):
                        await one(base)
                        await recorder.flush()  # its own batch: see the module
                finally:
                    sys.settrace(None)
                    threading.settrace(None)
                counted[arm] = counts
    return counted


def _where(code: CodeType | str) -> str:
    if isinstance(code, str):
        return f"{code} (a dataclass's)"
    path = code.co_filename
    for mark in ("/src/", "site-packages/", "/lib/python"):
        if mark in path:
            path = path.split(mark, 1)[1]
            break
    return f"{code.co_qualname} ({path}:{code.co_firstlineno})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="counted, per arm")
    parser.add_argument("--stream", action="store_true", help="the request asks for a stream")
    parser.add_argument("--mode", choices=("off", "hybrid"), default="off")
    parser.add_argument("--tools", action="store_true", help="the request carries tools")
    parser.add_argument("--top", type=int, default=0, help="the gateway's costliest functions")
    parser.add_argument(
        "--otel-endpoint",
        default="",
        metavar="URL",
        help="trace to this OTLP/HTTP collector (one nobody listens on: the collector down)",
    )
    args = parser.parse_args(argv)
    body: dict[str, Any] = {**BODY, "stream": args.stream}
    if args.tools:
        body["tools"] = TOOLS
    loop = new_loop()
    try:
        counted = loop.run_until_complete(
            measure(args.requests, json.dumps(body).encode(), args.mode, args.otel_endpoint)
        )
    finally:
        loop.close()
    per = {arm: sum(counts.values()) / args.requests for arm, counts in counted.items()}
    own = {arm: per[arm] - per["direct"] for arm in ("forwarder", "gateway")}
    shape = "stream" if args.stream else "plain"
    tools = ", tools" if args.tools else ""
    print(f"bytecode instructions per request ({shape}{tools}, mode {args.mode}):")
    print(f"  direct     {per['direct']:8.0f}  (the client and the mock)")
    print(f"  forwarder  {own['forwarder']:8.0f}  over direct")
    print(f"  gateway    {own['gateway']:8.0f}  over direct")
    print(f"  gateway / forwarder: {own['gateway'] / own['forwarder']:.2f}x")
    if args.top:
        gateway, direct = counted["gateway"], counted["direct"]
        forwarded = counted["forwarder"]
        print(f"the gateway's {args.top} costliest functions over the forwarder's (per request):")
        extra = {code: gateway[code] - max(direct[code], forwarded[code]) for code in gateway}
        for code, count in sorted(extra.items(), key=lambda item: -item[1])[: args.top]:
            print(f"  {count / args.requests:8.1f}  {_where(code)}")


if __name__ == "__main__":
    main()
