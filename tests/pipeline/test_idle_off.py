"""A lane that declares itself idle in mode off (``LaneSpec.idle_off``, what lets the express
path relay a request undecoded) changes nothing in mode off, whatever the request holds: the
gateway's own ``recall`` tool, turns a boundary kept, a host's compaction prompt, a long tool
output; it returns the request it was given, writes nothing and answers nothing. A lane that
does not declare it does act in mode off on some request (the declaration is not a default)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from skillstate.config import load_settings
from skillstate.conversation import Message, Request, Text, Tool, ToolCall, ToolResult, Wire
from skillstate.gateway import build_engine, build_lanes
from skillstate.pipeline.lane import LaneContext
from skillstate.pipeline.lineup import LANES
from skillstate.state.compaction import is_compaction
from skillstate.state.mode import Mode
from skillstate.state.tools import recall_tool
from skillstate.storage.stores import open_stores

IDLE = sorted(spec.name for spec in LANES if spec.idle_off)
LOG = "\n".join(f"line {n}: ERROR something failed at step {n}" for n in range(3_000))
COMPACT = "Your task is to create a detailed summary of the conversation so far. <summary>"


def requests(wire: Wire) -> list[Request]:
    tools = [recall_tool(), Tool(name="run", description="Run a command.", parameters={})]
    turns = [
        Message("user", [Text("Fix the build.")]),
        Message("assistant", [ToolCall("c1", "run", '{"cmd": "make"}')]),
        Message("user", [ToolResult("c1", [Text(LOG)])]),
        Message("assistant", [ToolCall("c2", "run", '{"cmd": "make test"}')]),
        Message("user", [ToolResult("c2", [Text(LOG)])]),
    ]
    return [
        Request(model="gpt-5", messages=turns, source=wire, tools=tools),
        Request(model="m", messages=[*turns, Message("user", [Text(COMPACT)])], source=wire),
        Request(model="m", messages=turns[:1], source=wire, system=[Text("Be brief.")]),
    ]


@pytest.fixture
async def lanes(tmp_path: Path) -> dict[str, object]:
    settings = load_settings(environ={}, cli={"data_dir": str(tmp_path)})
    stores = await open_stores(tmp_path)
    try:
        yield {lane.name: lane for lane in build_lanes(settings, build_engine(settings, stores))}
    finally:
        await stores.close()


@pytest.mark.parametrize("wire", list(Wire))
@pytest.mark.parametrize("name", IDLE)
async def test_a_lane_idle_in_mode_off_returns_the_request_it_was_given(
    lanes: dict[str, object], name: str, wire: Wire
) -> None:
    lane = lanes[name]
    for request in requests(wire):
        context = LaneContext("s", wire, wire, Mode.OFF, kept=range(3))
        outcome = await lane(request, context)  # type: ignore[operator]
        assert outcome.request is request
        assert (outcome.writes, outcome.answer, outcome.followup) == ([], None, None)


async def test_a_lane_not_declared_idle_acts_in_mode_off(lanes: dict[str, object]) -> None:
    """The style lane adds its instruction in any mode: it must not be taken for idle."""
    assert "style" not in IDLE and "schemas" not in IDLE and "effort" not in IDLE
    request = requests(Wire.CHAT)[2]
    context = LaneContext("s", Wire.CHAT, Wire.CHAT, Mode.OFF, extra={"style": "concise"})
    outcome = await lanes["style"](request, context)  # type: ignore[operator]
    assert outcome.request is not request


PASSING = sorted(spec.name for spec in LANES if spec.idle_passing)


def passing_requests(wire: Wire) -> list[Request]:
    """``requests`` as a session passed through before its first boundary sends them: tools
    of its own (not the gateway's ``recall``, which comes with the first boundary), no
    host's compaction (``may_compact`` sends that one down the full path), and the newest
    output short (a long one sends the request down the full path too, for the state lane
    to price compacting it: ``state.bulky``); the long output before it stays."""
    own = [Tool(name="run", description="Run a command.", parameters={})]
    short = Message("user", [ToolResult("c2", [Text("ok")])])
    return [
        replace(request, tools=own, messages=[*request.messages[:-1], short])
        for request in requests(wire)
        if not is_compaction(request) and len(request.messages) > 1
    ] + [replace(requests(wire)[2], tools=own)]


@pytest.mark.parametrize("wire", list(Wire))
@pytest.mark.parametrize("name", PASSING)
async def test_a_lane_idle_while_passing_returns_the_request_it_was_given_in_hybrid(
    lanes: dict[str, object], name: str, wire: Wire
) -> None:
    """``LaneSpec.idle_passing``: before the session's first boundary, in hybrid mode, the
    lane leaves the request as it came (the state lane only follows up, untouched)."""
    assert {"state", "outputs", "compaction"} <= set(PASSING) and "style" not in PASSING
    lane = lanes[name]
    for request in passing_requests(wire):
        context = LaneContext("s", wire, wire, Mode.HYBRID)
        outcome = await lane(request, context)  # type: ignore[operator]
        assert outcome.request is request
        assert (outcome.writes, outcome.answer) == ([], None)
        assert outcome.followup is None or outcome.followup.untouched
