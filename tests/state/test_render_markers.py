"""The gateway's breakpoint on Σ never costs the client its cache (issue 10, build item 3).

Over generated sessions on the Anthropic wire, with 0 to 4 client markers anywhere (tools,
system blocks, messages of the head, of the collapsed spans and of the tail, the newest
message), each request of one epoch is rendered twice: with the gateway's placement
(``cache_markers=True``) and with the client's own markers only. Both sequences are billed by
the simulated Anthropic cache (``testing.prompt_cache.ExplicitCache`` over
``testing.token_view``, which read the encoded JSON and none of the gateway's code):

(a) the gateway's request never carries more than four ``cache_control`` blocks;
(b) the client's marker on the newest message is always kept;
(c) every request reads at least the prefix the client's own placement reads ("cached
    prefix" as ``ExplicitCache.use`` defines it: the longest prefix ending at a block
    boundary within the lookback of a breakpoint that an earlier breakpoint wrote).

The session's bill is asserted for the issue's layout (all four markers in use), not for
every layout: where there is room the gateway adds its breakpoint, and one whose entry is
never read (the next request fills all four and its tail has grown past the 20-block
lookback) costs its write premium (0.25x of the prefix up to Σ) once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import example, given, settings
from hypothesis import strategies as st

from skillstate.conversation import (
    CacheMark,
    Message,
    Part,
    Request,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Wire,
)
from skillstate.protocols import adapter
from skillstate.state.render import MAX_CACHE_BREAKPOINTS, SpanRef, render_hybrid
from skillstate.state.schema import StateSchema
from skillstate.state.tools import recall_tool, skill_state_tool
from skillstate.support import jsonio
from skillstate.testing.prompt_cache import ExplicitCache
from skillstate.testing.token_view import token_view

SCHEMA = StateSchema.from_keys(None)
MINIMUM = 64
"""The shortest cacheable prefix, small so that short generated prompts cache (and some
prefixes still fall under it)."""
WRITE, READ = 1.25, 0.1
"""Anthropic's 5-minute write and read prices, relative to plain input."""


@dataclass(frozen=True, slots=True)
class Session:
    """A generated session: ``tools`` and ``system`` block sizes, the parallel calls of each
    step, how many steps collapse (after the first message), the step counts of the epoch's
    requests, and the client's marker layout."""

    tools: int
    system: tuple[int, ...]
    steps: tuple[int, ...]
    collapsed: int
    requests: tuple[int, ...]
    layout: frozenset[tuple[str, int]]


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    tools = draw(st.integers(1, 3))
    system = tuple(draw(st.lists(st.integers(1, 60), min_size=1, max_size=3)))
    steps = tuple(draw(st.lists(st.integers(1, 12), min_size=4, max_size=9)))
    collapsed = draw(st.integers(1, len(steps) - 3))
    counts = draw(st.sets(st.integers(collapsed + 1, len(steps)), min_size=2, max_size=3))
    upper = [("tool", i) for i in range(tools)] + [("system", i) for i in range(len(system))]
    lower = [("from_end", k) for k in range(2, 5)] + [("at", i) for i in range(2 * len(steps) + 1)]
    newest = [("from_end", 1)] if draw(st.booleans()) else []  # the client's usual marker
    chosen = draw(st.lists(st.sampled_from(upper), unique=True, max_size=4))
    chosen += draw(st.lists(st.sampled_from(lower), unique=True, max_size=4))
    layout = (newest + chosen)[: draw(st.integers(0, MAX_CACHE_BREAKPOINTS) | st.just(4))]
    return Session(tools, system, steps, collapsed, tuple(sorted(counts)), frozenset(layout))


def client_request(session: Session, steps: int) -> Request:
    """The client's request after ``steps`` steps, with its markers where the layout says."""
    messages = [Message("user", [Text("Fix the failing parser test, then run the suite.")])]
    for n, calls in enumerate(session.steps[:steps]):
        ids = [f"call_{n}_{c}" for c in range(calls)]
        uses: list[Part] = [
            ToolCall(i, "read", json.dumps({"path": f"src/m{n}_{c}.py"})) for c, i in enumerate(ids)
        ]
        results: list[Part] = [
            ToolResult(i, [Text(f"line {n}.{c}: value = {n * c}\n" * (1 + (n + c) % 4))])
            for c, i in enumerate(ids)
        ]
        messages += [Message("assistant", uses), Message("user", results)]
    system = [Text(f"Rule {i}: keep it small. " * size) for i, size in enumerate(session.system)]
    tools = [Tool(f"tool{i}", f"Tool {i}.", {"type": "object"}) for i in range(session.tools)]
    for kind, at in session.layout:
        if kind == "tool":
            tools[at].cache = CacheMark()
        elif kind == "system":
            system[at].cache = CacheMark()
        else:
            index = len(messages) - at if kind == "from_end" else at
            if 0 <= index < len(messages):
                part = messages[index].parts[-1]
                assert isinstance(part, Text | ToolCall | ToolResult)
                part.cache = CacheMark()
    return Request("claude-test", messages, Wire.MESSAGES, system, tools)


def rendered(session: Session, request: Request, *, gateway: bool) -> Request:
    last = 2 * session.collapsed
    span = SpanRef("sha256:abc", 2, last + 1, session.collapsed, "read the parser")
    return render_hybrid(
        request,
        head=range(1),
        tail=range(last + 1, len(request.messages)),
        snapshot={"objective": "fix the parser", "step": session.collapsed},
        spans=[span],
        changes={},
        nudge=None,
        schema=SCHEMA,
        internal_tools=[skill_state_tool(SCHEMA), recall_tool()],
        cache_markers=gateway,
    )


def newest_marked(request: Request, newest: int) -> bool:
    part = request.messages[newest].parts[-1]
    return isinstance(part, Text | ToolCall | ToolResult) and part.cache is not None


ALL_FOUR = Session(
    tools=2,
    system=(40, 20),
    steps=(1, 2, 1, 3, 1, 2),
    collapsed=2,
    requests=(3, 4, 6),
    layout=frozenset({("tool", 1), ("system", 0), ("system", 1), ("from_end", 1)}),
)
"""The layout of issue 10: the last tool, both system blocks and the newest message."""


@settings(max_examples=300, deadline=None)
@given(sessions())
@example(ALL_FOUR)
def test_the_gateways_placement_never_caches_less_than_the_clients(session: Session) -> None:
    bill(session)


def test_with_all_four_markers_in_use_the_bill_is_no_higher_than_the_clients() -> None:
    gateway, client = bill(ALL_FOUR)
    assert gateway <= client


def bill(session: Session) -> tuple[float, float]:
    """Checks (a) to (c) request by request; returns the session's cache-weighted input cost
    with the gateway's placement and with the client's."""
    caches = {True: ExplicitCache(), False: ExplicitCache()}
    costs = {True: 0.0, False: 0.0}
    for now, steps in enumerate(session.requests):
        request = client_request(session, steps)
        reads = {}
        for gateway in (True, False):
            out = rendered(session, request, gateway=gateway)
            body = adapter(Wire.MESSAGES).encode_request(out)
            assert jsonio.dumps_str(body).count('"cache_control"') <= MAX_CACHE_BREAKPOINTS  # (a)
            newest = len(request.messages) - 2 * session.collapsed  # head, Σ, then the tail
            if newest_marked(request, -1):
                assert newest_marked(out, newest)  # (b)
            view = token_view(Wire.MESSAGES, body)
            use = caches[gateway].use(view, "claude-test", MINIMUM, 60.0 * now)
            reads[gateway] = use.read
            uncached = len(view) - use.read - use.write_5m - use.write_1h
            costs[gateway] += uncached + READ * use.read + WRITE * use.write_5m
        assert reads[True] >= reads[False]  # (c)
    return costs[True], costs[False]
