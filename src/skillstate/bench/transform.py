"""What the state lane adds to each request of a long session: the time from the decoded client
request to the encoded upstream body (load Σ and the epoch, decide, render, encode), measured
in-process on the real stores, turn by turn over one growing session.

Run: ``python -m skillstate.bench.transform [--turns N] [--store sqlite|memory]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from skillstate.conversation import Message, Request, Text, Tool, ToolCall, ToolResult, Wire
from skillstate.protocols import adapter
from skillstate.state.boundary import decide
from skillstate.state.engine import StateEngine
from skillstate.state.mode import Mode
from skillstate.state.options import CollapseOptions
from skillstate.state.prepared import EngineConfig, Prepared
from skillstate.state.schema import StateSchema
from skillstate.storage.stores import open_stores
from skillstate.support import jsonio
from skillstate.testing.long_session import file_text

TOOLS = [Tool("read_file", parameters={"type": "object", "properties": {"path": {}}})]


def session_request(turns: int) -> Request:
    """A Chat client's request after ``turns`` tool steps of 3 KB file reads."""
    messages = [
        Message("system", [Text("You are a careful code auditor.")]),
        Message("user", [Text("Audit every module.")]),
    ]
    for n in range(turns):
        call = ToolCall(f"call_{n}", "read_file", jsonio.dumps_str({"path": f"m{n}.py"}))
        messages.append(Message("assistant", [call]))
        messages.append(Message("tool", [ToolResult(call.id, [Text(file_text(n))])]))
    return Request("bench-model", messages, Wire.CHAT, tools=TOOLS)


async def run(
    turns: int, store: str, stages: dict[str, list[float]] | None = None
) -> list[tuple[int, float, int, int]]:
    """Per turn: (turn, milliseconds, client body bytes, upstream body bytes). With
    ``stages``, also the milliseconds of the boundary decision alone (timed again apart from
    ``prepare``), of encoding the upstream body, and of ``finish`` (the seed's commit)."""
    with tempfile.TemporaryDirectory() as scratch:
        stores = await open_stores(Path(scratch) if store == "sqlite" else None)
        config = EngineConfig(schema=StateSchema.from_keys(None), options=CollapseOptions())
        engine = StateEngine(stores.state, stores.archive, config)
        chat = adapter(Wire.CHAT)
        rows = []
        try:
            for turn in range(1, turns + 1):
                request = session_request(turn)
                client_bytes = len(jsonio.dumps(chat.encode_request(request)))
                started = time.perf_counter()
                prepared = await engine.prepare("bench", request, Mode.HYBRID, Wire.CHAT)
                assert prepared is not None
                encoding = time.perf_counter()
                body = jsonio.dumps(chat.encode_request(prepared.request))
                done = time.perf_counter()
                await engine.finish(prepared, None)
                finished = time.perf_counter()
                rows.append((turn, (done - started) * 1000, client_bytes, len(body)))
                if stages is not None and turn > turns // 2:
                    _time_stages(stages, request, prepared, done - encoding, finished - done)
        finally:
            await stores.close()
        return rows


def _time_stages(
    stages: dict[str, list[float]],
    request: Request,
    prepared: Prepared,
    encode_s: float,
    finish_s: float,
) -> None:
    started = time.perf_counter()
    decide(request.messages, prepared.epoch, prepared.record.state, CollapseOptions())
    stages.setdefault("boundary decision", []).append((time.perf_counter() - started) * 1000)
    stages.setdefault("encode upstream body", []).append(encode_s * 1000)
    stages.setdefault("finish (seed commit)", []).append(finish_s * 1000)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite")
    args = parser.parse_args(argv)
    stages: dict[str, list[float]] = {}
    rows = asyncio.run(run(args.turns, args.store, stages))
    print(f"state lane transform time per request, hybrid mode, {args.store} store")
    print(f"{'turn':>5} {'ms':>8} {'client KB':>10} {'upstream KB':>12}")
    for turn, ms, client, upstream in rows:
        if turn % 25 == 0 or turn == 1:
            print(f"{turn:5d} {ms:8.2f} {client / 1024:10.1f} {upstream / 1024:12.1f}")
    times = sorted(ms for _, ms, _, _ in rows)
    p50 = statistics.median(times)
    p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
    print(f"p50 {p50:.2f} ms, p99 {p99:.2f} ms over {len(rows)} requests")
    print(f"medians over the second half of the session (turns {args.turns // 2 + 1}-):")
    for name, values in stages.items():
        print(f"  {name}: {statistics.median(values):.2f} ms")


if __name__ == "__main__":
    main()
