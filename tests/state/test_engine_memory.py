"""What the engine keeps in memory per session is bounded; a report pushed out is in the store,
where the session's description still finds it."""

from __future__ import annotations

from skillstate.conversation import Message, Request, Text, Tool, ToolCall, ToolResult, Wire
from skillstate.state.engine import REPORT_DOC, EngineConfig, StateEngine
from skillstate.state.mode import Mode
from skillstate.state.options import CollapseOptions
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
