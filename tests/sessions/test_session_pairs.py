"""A property over generated agent sessions with parallel calls: whatever the engine does to a
growing conversation (boundaries when the window grows, forced ones at random), no upstream
request ever splits a tool pair, on any wire, and nothing is lost: each request's head, the
archived spans and the verbatim window put back together are the client's history exactly.

Each example is one session: the client's history grows by a step at a time (a parallel
batch whose results come as tool messages in any order or inside one user message, a user
instruction, a system note, a text-only answer) and the engine prepares a request after each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from skillstate.conversation import Message, Request, Text, Tool, ToolCall, ToolResult, Wire
from skillstate.protocols import adapter
from skillstate.protocols.portable import portable_request
from skillstate.state.engine import StateEngine
from skillstate.state.epochs import CachePrices, same_content
from skillstate.state.mode import Mode
from skillstate.state.options import CollapseOptions
from skillstate.state.prepared import EngineConfig
from skillstate.state.schema import StateSchema
from skillstate.storage.memory import MemoryArchiveStore, MemoryStateStore
from skillstate.support import jsonio
from skillstate.testing.session_checks import unpaired

TOOL = Tool("run", "Run a command.", {"type": "object", "properties": {}})
#: No cache discount: every window larger than the turns kept is worth a boundary, so the
#: sessions go through many of them.
EAGER = CachePrices(input=1.0, cached_input=1.0)


@dataclass(frozen=True, slots=True)
class Session:
    """The client's history after each step, and the steps before which a collapse is
    forced."""

    histories: list[list[Message]]
    forced: frozenset[int]


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    ids = iter(range(10**6))
    history = [Message("system", [Text("You are an agent.")]), Message("user", [Text("task")])]
    histories = [list(history)]
    for _ in range(draw(st.integers(1, 24))):
        history += draw(_step(ids))
        histories.append(list(history))
    forced = draw(st.frozensets(st.integers(0, len(histories) - 1), max_size=4))
    return Session(histories, forced)


def _step(ids: Iterator[int]) -> st.SearchStrategy[list[Message]]:
    @st.composite
    def step(draw: st.DrawFn) -> list[Message]:
        kind = draw(st.sampled_from(["batch", "batch", "batch", "user", "note", "text"]))
        if kind == "user":
            return [Message("user", [Text("also do this")])]
        if kind == "note":
            return [Message("system", [Text("a reminder")]), *_batch(draw, ids)]
        if kind == "text":
            return [Message("assistant", [Text("thinking aloud")])]
        return _batch(draw, ids)

    return step()


def _batch(draw: st.DrawFn, ids: Iterator[int]) -> list[Message]:
    calls = [f"c{next(ids)}" for _ in range(draw(st.integers(1, 4)))]
    size = draw(st.integers(0, 400))
    out: list[Message] = [
        Message("assistant", [ToolCall(c, "run", jsonio.dumps_str({"n": c})) for c in calls])
    ]
    order = draw(st.permutations(calls))
    results = [ToolResult(c, [Text(f"output of {c}: " + "x" * size)]) for c in order]
    if draw(st.booleans()):
        out += [Message("tool", [r]) for r in results]
    else:
        out.append(Message("user", [*results]))
    return out


def _engine(keep: int, min_turns: int) -> StateEngine:
    options = CollapseOptions(min_turns=min_turns, keep_recent_turns=keep)
    config = EngineConfig(
        schema=StateSchema.from_keys(None), options=options, prices=lambda _model, _wire: EAGER
    )
    return StateEngine(MemoryStateStore(), MemoryArchiveStore(), config)


def _is_note(message: Message) -> bool:
    texts = [p.text for p in message.parts if isinstance(p, Text)]
    return message.role == "user" and bool(texts) and texts[0].startswith("[skillstate]")


def _pair_problems(messages: list[Message]) -> list[str]:
    called: set[str] = set()
    problems: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolResult) and part.call_id not in called:
                problems.append(f"result {part.call_id} before or without its call")
        called |= {p.id for p in message.parts if isinstance(p, ToolCall)}
    answered = {p.call_id for m in messages for p in m.parts if isinstance(p, ToolResult)}
    return problems + [f"call {c} without its result" for c in sorted(called - answered)]


async def _play(session: Session, keep: int, min_turns: int) -> int:
    engine = _engine(keep, min_turns)
    boundaries = 0
    for number, history in enumerate(session.histories):
        if number in session.forced:
            await engine.request_collapse("s")
        client = Request("m", history, Wire.CHAT, tools=[TOOL])
        prepared = await engine.prepare("s", client, Mode.HYBRID, Wire.CHAT)
        assert prepared is not None
        outbound = prepared.request
        assert _pair_problems(outbound.messages) == []
        for wire in Wire:
            body = adapter(wire).encode_request(portable_request(outbound, wire)[0])
            key = "input" if wire is Wire.RESPONSES else "messages"
            assert unpaired(body[key]) == [], wire
        epoch = prepared.epoch
        if epoch is None:
            assert outbound.messages[: len(history)] == history
            continue
        boundaries = max(boundaries, epoch.number)
        archived: list[Message] = []
        for span in epoch.spans:
            kept = await engine.archive.span(span.ref)
            assert kept is not None
            archived += kept
        rebuilt = history[: epoch.head] + archived + history[epoch.cut :]
        assert len(rebuilt) == len(history)
        assert all(same_content(a, b) for a, b in zip(rebuilt, history, strict=True))
        assert history[1] in outbound.messages, "the first instruction was collapsed"
        sent = outbound.messages
        if sent[-1] is not history[-1] and _is_note(sent[-1]):
            sent = sent[:-1]
        tail = history[epoch.cut :]
        assert tail and sent[-len(tail) :] == tail
    return boundaries


@settings(max_examples=60, deadline=None)
@given(sessions(), st.integers(1, 3), st.integers(0, 4))
def test_no_request_of_a_growing_session_splits_a_tool_pair(
    session: Session, keep: int, min_turns: int
) -> None:
    asyncio.run(_play(session, keep, min_turns))


def test_the_generated_sessions_do_go_through_boundaries() -> None:
    collected: list[int] = []

    @settings(max_examples=30, deadline=None, database=None)
    @given(sessions())
    def run(session: Session) -> None:
        collected.append(asyncio.run(_play(session, 1, 0)))

    run()
    assert sum(1 for b in collected if b >= 2) >= 5, collected
