"""What the engine keeps in memory per session is bounded; a report pushed out is in the store,
where the session's description still finds it."""

from __future__ import annotations

import gc
import tracemalloc

from skillstate.conversation import Message, Request, Text, Tool, ToolCall, ToolResult, Wire
from skillstate.economics.tokenizer import encoding
from skillstate.state.boundary import decide
from skillstate.state.engine import REPORT_DOC, StateEngine
from skillstate.state.mode import Mode
from skillstate.state.options import CollapseOptions
from skillstate.state.prepared import EngineConfig
from skillstate.state.reports import LastReport
from skillstate.state.schema import StateSchema
from skillstate.storage import MemoryArchiveStore, MemoryStateStore


def _loop(turns: int) -> Request:
    messages = [Message("user", [Text("do the task")])]
    for n in range(turns):
        messages.append(Message("assistant", [ToolCall(f"c{n}", "run", '{"cmd": "true"}')]))
        messages.append(Message("tool", [ToolResult(f"c{n}", [Text("ok")])]))
    tools = [Tool("run", parameters={"type": "object"})]
    return Request(model="m", messages=messages, source=Wire.CHAT, tools=tools)


async def test_a_report_pushed_out_of_memory_is_kept_in_the_store() -> None:
    engine = StateEngine(
        MemoryStateStore(),
        MemoryArchiveStore(),
        EngineConfig(schema=StateSchema.from_keys(None), options=CollapseOptions()),
        kept_sessions=2,
    )
    for session in ("a", "b", "c"):
        prepared = await engine.prepare(session, _loop(3), Mode.HYBRID, Wire.CHAT)
        assert prepared is not None
        await engine.finish(prepared, None)
    described = await engine.describe("a")
    assert described is not None and described["context"] is not None
    assert described["context"]["messages"] == 7
    assert await engine.store.get_doc("a", REPORT_DOC) is not None  # out of memory
    assert await engine.store.get_doc("c", REPORT_DOC) is None  # still in memory
    assert (await engine.describe("c") or {})["context"]["messages"] == 7
    await engine.reset("a")
    assert await engine.store.get_doc("a", REPORT_DOC) is None


def test_a_kept_report_holds_no_more_than_it_weighs() -> None:
    """The reports' cache is bounded by their weight: what a report keeps once its request,
    its decision and their turns are gone must be no more than its weight says."""
    encoding()  # loaded before measuring: the vocabulary's load is not the report's
    request = _loop(30)  # under 64 messages: no prefix memo keeps its turns
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        decision = decide(request.messages, None, {}, CollapseOptions())
        last = LastReport.of({"mode": "hybrid", "step": 1}, decision, None)
        del decision, request
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held <= last.weight()
    turns = last.shown()["turns"]
    assert [t["kind"] for t in turns[:3]] == ["user", "assistant", "assistant"]
    assert [t["index"] for t in turns] == list(range(31))
