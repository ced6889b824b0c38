"""The seed keeps Σ's step current until the model writes it; then the model's value stands."""

from __future__ import annotations

from skillstate.conversation import (
    Message,
    Request,
    Response,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Wire,
)
from skillstate.state.engine import StateEngine
from skillstate.state.mode import Mode
from skillstate.state.options import CollapseOptions
from skillstate.state.prepared import EngineConfig
from skillstate.state.schema import StateSchema
from skillstate.storage import MemoryArchiveStore, MemoryStateStore


def _loop(turns: int) -> Request:
    messages = [Message("user", [Text("do the task")])]
    for n in range(turns):
        messages.append(Message("assistant", [ToolCall(f"c{n}", "run", '{"cmd": "true"}')]))
        messages.append(Message("tool", [ToolResult(f"c{n}", [Text("ok")])]))
    tools = [Tool("run", parameters={"type": "object"})]
    return Request(model="m", messages=messages, source=Wire.CHAT, tools=tools)


async def test_step_follows_the_loop_until_the_model_sets_it() -> None:
    engine = StateEngine(
        MemoryStateStore(),
        MemoryArchiveStore(),
        EngineConfig(schema=StateSchema.from_keys(None), options=CollapseOptions()),
    )
    for turns in (1, 2, 3):
        prepared = await engine.prepare("s", _loop(turns), Mode.HYBRID, Wire.CHAT)
        assert prepared is not None
        await engine.finish(prepared, None)
        assert (await engine.store.load("s")).state["step"] == turns
    call = ToolCall("k", "skill_state", '{"patch": {"step": 40}}')
    await engine.answer(prepared, call)
    prepared = await engine.prepare("s", _loop(4), Mode.HYBRID, Wire.CHAT)
    assert prepared is not None
    await engine.finish(prepared, None)
    assert (await engine.store.load("s")).state["step"] == 40


def _reply(n: int) -> Response:
    call = ToolCall(f"c{n}", "run", '{"cmd": "true"}')
    return Response("r", "m", Message("assistant", [call]), Wire.CHAT)


async def _listed_step(engine: StateEngine) -> int:
    [info] = await engine.store.list_sessions()
    return info.step


async def test_sigma_step_and_the_listed_step_name_the_same_step() -> None:
    engine = StateEngine(
        MemoryStateStore(),
        MemoryArchiveStore(),
        EngineConfig(schema=StateSchema.from_keys(None), options=CollapseOptions()),
    )
    # As a client sends them: request n holds the n - 1 steps before it; its reply is step n.
    for n in (1, 2, 3):
        prepared = await engine.prepare("s", _loop(n - 1), "hybrid", Wire.CHAT)
        assert prepared is not None
        await engine.finish(prepared, _reply(n))
        assert (await engine.store.load("s")).state["step"] == n == await _listed_step(engine)
    # A retried request is the same step again, not a new one.
    prepared = await engine.prepare("s", _loop(2), "hybrid", Wire.CHAT)
    assert prepared is not None
    await engine.finish(prepared, _reply(3))
    assert (await engine.store.load("s")).state["step"] == 3 == await _listed_step(engine)


async def test_once_the_model_writes_the_step_the_session_counts_its_requests() -> None:
    engine = StateEngine(
        MemoryStateStore(),
        MemoryArchiveStore(),
        EngineConfig(schema=StateSchema.from_keys(None), options=CollapseOptions()),
    )
    prepared = await engine.prepare("s", _loop(0), "hybrid", Wire.CHAT)
    assert prepared is not None
    await engine.answer(prepared, ToolCall("k", "skill_state", '{"patch": {"step": 40}}'))
    await engine.finish(prepared, _reply(1))
    prepared = await engine.prepare("s", _loop(1), "hybrid", Wire.CHAT)
    assert prepared is not None
    await engine.finish(prepared, _reply(2))
    assert (await engine.store.load("s")).state["step"] == 40
    assert await _listed_step(engine) == 2


def test_a_window_past_the_cap_starts_a_boundary_whatever_the_cost_rule() -> None:
    from skillstate.state.boundary import decide
    from skillstate.state.epochs import CachePrices

    big = "word " * 4000  # about 4,000 tokens a result
    messages = [Message("user", [Text("task")])]
    for n in range(13):  # about 52,000 tokens: under the default cap
        messages.append(Message("assistant", [ToolCall(f"c{n}", "run", "{}")]))
        messages.append(Message("tool", [ToolResult(f"c{n}", [Text(big)])]))
    # Cache reads nearly free: the cost rule alone would never collapse.
    cheap = CachePrices(input=1.0, cached_input=0.0001, cache_write=1.25)
    assert not decide(messages, None, {}, CollapseOptions(), prices=cheap).threshold_hit
    capped = CollapseOptions(max_window_tokens=20_000)
    decision = decide(messages, None, {}, capped, prices=cheap)
    assert decision.threshold_hit and decision.new_span is not None


def _with(system: str, task: str) -> Request:
    request = _loop(1)
    request.system = [Text(system)]
    request.messages[0] = Message("user", [Text(task)])
    return request


async def test_a_subagent_needs_its_own_prompt_and_its_own_task() -> None:
    engine = StateEngine(
        MemoryStateStore(),
        MemoryArchiveStore(),
        EngineConfig(schema=StateSchema.from_keys(None), options=CollapseOptions()),
    )
    assert await engine.prepare(
        "s", _with("You are Opus (1M)", "fix the bug"), Mode.HYBRID, Wire.CHAT
    )
    # The host rewrote a line of its prompt between runs: still the same conversation.
    assert await engine.prepare("s", _with("You are Opus", "fix the bug"), Mode.HYBRID, Wire.CHAT)
    # A helper agent with its own prompt and its own task: left alone.
    helper = _with("You explore code", "find the config loader")
    assert await engine.prepare("s", helper, Mode.HYBRID, Wire.CHAT) is None


async def _collapsed_summary(track: bool) -> str:
    engine = StateEngine(
        MemoryStateStore(),
        MemoryArchiveStore(),
        EngineConfig(
            schema=StateSchema.from_keys(None), options=CollapseOptions(track_tools=track)
        ),
    )
    await engine.prepare("s", _loop(2), Mode.HYBRID, Wire.CHAT)
    await engine.request_collapse("s")
    prepared = await engine.prepare("s", _loop(20), Mode.HYBRID, Wire.CHAT)
    assert prepared is not None and prepared.epoch is not None
    return prepared.epoch.spans[0].summary


async def test_track_tools_names_what_ran_in_a_collapsed_span() -> None:
    assert "tools: run x" in await _collapsed_summary(True)
    assert "tools:" not in await _collapsed_summary(False)


async def test_reset_forgets_the_epoch_too() -> None:
    # Only a forced boundary collapses here, so an epoch after the reset could only be stale.
    options = CollapseOptions(min_turns=100)
    engine = StateEngine(
        MemoryStateStore(),
        MemoryArchiveStore(),
        EngineConfig(schema=StateSchema.from_keys(None), options=options),
    )
    await engine.prepare("s", _loop(2), Mode.HYBRID, Wire.CHAT)
    await engine.request_collapse("s")
    collapsed = await engine.prepare("s", _loop(20), Mode.HYBRID, Wire.CHAT)
    assert collapsed is not None and collapsed.epoch is not None
    assert await engine.reset("s") == (True, 1)
    fresh = await engine.prepare("s", _loop(20), Mode.HYBRID, Wire.CHAT)
    assert fresh is not None and fresh.epoch is None  # no stale epoch from memory
    assert len(fresh.request.messages) >= len(_loop(20).messages)


def test_every_request_starts_a_boundary_whenever_the_cut_can_move() -> None:
    from skillstate.state.boundary import decide
    from skillstate.state.epochs import CachePrices

    messages = [Message("user", [Text("task")])]
    for n in range(14):  # small results: the cost rule alone never collapses them
        messages.append(Message("assistant", [ToolCall(f"c{n}", "run", "{}")]))
        messages.append(Message("tool", [ToolResult(f"c{n}", [Text("ok")])]))
    cheap = CachePrices(input=1.0, cached_input=0.0001, cache_write=1.25)
    assert not decide(messages, None, {}, CollapseOptions(), prices=cheap).threshold_hit
    eager = CollapseOptions(every_request=True)
    decision = decide(messages, None, {}, eager, prices=cheap)
    assert decision.threshold_hit and decision.new_span is not None
