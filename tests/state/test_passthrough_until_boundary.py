"""With ``passthrough_until_boundary`` a hybrid session goes upstream as it came until its first
boundary (the seed still keeps Σ in the store); the internal tools and Σ arrive with it."""

from __future__ import annotations

from read_loops import read_loop

from skillstate.conversation import Wire
from skillstate.state.engine import StateEngine
from skillstate.state.mode import Mode
from skillstate.state.options import CollapseOptions
from skillstate.state.prepared import EngineConfig
from skillstate.state.schema import StateSchema
from skillstate.storage import MemoryArchiveStore, MemoryStateStore


def _engine(**options: object) -> StateEngine:
    config = EngineConfig(
        schema=StateSchema.from_keys(None),
        options=CollapseOptions(passthrough_until_boundary=True, **options),  # type: ignore[arg-type]
    )
    return StateEngine(MemoryStateStore(), MemoryArchiveStore(), config)


async def test_a_short_session_goes_upstream_as_it_came_and_sigma_is_still_seeded() -> None:
    engine = _engine()
    for turns in range(1, 8):
        request = read_loop(turns)
        prepared = await engine.prepare("s", request, Mode.HYBRID, Wire.CHAT)
        assert prepared is not None
        assert prepared.request is request and prepared.internal == {}
        await engine.finish(prepared, None)
    state = (await engine.store.load("s")).state
    assert state["step"] == 7  # the seed ran, though nothing was sent


async def test_the_internal_tools_and_sigma_arrive_with_the_first_boundary_and_stay() -> None:
    engine = _engine()
    seen: list[int] = []
    for turns in range(1, 60):
        prepared = await engine.prepare("s", read_loop(turns), Mode.HYBRID, Wire.CHAT)
        assert prepared is not None
        await engine.finish(prepared, None)
        if prepared.internal:
            seen.append(turns)
            assert prepared.epoch is not None
            assert {t.name for t in prepared.request.tools} >= {"skill_state", "recall"}
    assert seen and seen == list(range(seen[0], 60))
    assert seen[0] >= CollapseOptions().min_turns
