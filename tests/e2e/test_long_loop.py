"""A real agent CLI runs a 30-turn tool loop through the gateway in hybrid mode (the default):
the conversation passes the epoch threshold, the gateway collapses its old turns into the Σ
message, and the CLI still finishes without a protocol error (issue 3, "Done when").

The upstream plays the model with ``LoopPolicy``: one shell call per request, each printing
about 4 KB (some 2,000 tokens, so the verbatim window passes the default threshold of about
20k tokens within 30 turns), until 30 results have come back, then a final text. Only the
first command prints ``FACT``. At the first request that holds the gateway's Σ message the
policy asks the gateway's ``recall`` tool for it; the gateway answers from its archive and
continues the turn upstream, and the CLI never sees the call.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from e2e_support import Invocation, Trip, assert_translated, client_request, round_trip
from test_claude_code import assert_claude_result, claude_print
from test_codex import assert_codex_session, codex_exec
from wire_rules import wire_problems

from skillstate.conversation import Request, Text, ToolCall, ToolResult, Wire
from skillstate.state.render import NOTE_LABEL
from skillstate.testing import RecordedRequest
from skillstate.testing.agents import LoopPolicy, tool_outputs

pytestmark = pytest.mark.e2e

TURNS = 30
#: Printed by the first command only; no command holds it as one word.
FACT = "skillstate-fact-tapir"
#: How the gateway's Σ message begins (state/render.py, ``sigma_message``).
SIGMA = f"{NOTE_LABEL} Session state"
FINAL_TEXT = "All thirty listings were printed; the loop is complete."
#: A run takes a few seconds; a hung one fails well within the test's budget.
LIMIT_S = 60.0


def command_for(turn: int) -> str:
    """Turn ``n``'s command: its number, then 1,000 numbered lines (about 4 KB)."""
    fact = "printf 'skillstate-%s\\n' fact-tapir; " if turn == 1 else ""
    return f"{fact}echo turn {turn}; seq 1 1000"


async def long_trip(invocation: Callable[[str], Invocation], wire: str = "auto") -> Trip:
    """The loop through a gateway with default settings (hybrid mode), to an upstream speaking
    ``wire`` (the client's own with "auto")."""
    policy = LoopPolicy(
        turns=TURNS,
        command_for=command_for,
        final_text=FINAL_TEXT,
        recall_query=FACT,
        recall_cue=SIGMA,
    )
    return await round_trip(invocation, wire=wire, policy=policy, limit_s=LIMIT_S)


def loop_policy(trip: Trip) -> LoopPolicy:
    assert isinstance(trip.policy, LoopPolicy)
    return trip.policy


def assert_loop_finished(trip: Trip) -> None:
    """The CLI exited 0 with the final text after 30 shell round trips: each call's result came
    back once, under its own id, in a later request, and shows its command ran."""
    report = trip.report()
    policy = loop_policy(trip)
    assert trip.cli.returncode == 0, report
    assert FINAL_TEXT in trip.cli.stdout, report
    assert len(policy.calls) == TURNS, report
    assert [out.call_id for out in policy.outputs] == [call.id for call in policy.calls], report
    for turn, (call, out) in enumerate(zip(policy.calls, policy.outputs, strict=True), 1):
        assert out.request > call.request, report
        assert f"turn {turn}\n" in out.text and "\n1000" in out.text, report
    assert FACT in policy.outputs[0].text, report
    assert not any(FACT in out.text for out in policy.outputs[1:]), report


def assert_clean_session(trip: Trip, source: str) -> None:
    """No error anywhere, every upstream request pairs its tool calls and results as its wire
    requires, and every request stayed in the one session the client named."""
    report = trip.report()
    assert trip.upstream.errors == [], report
    assert trip.exchanges, report
    assert all(exchange.status == 200 for exchange in trip.exchanges), report
    for request in trip.model_requests:
        assert request.wire is not None, report
        problems = wire_problems(request.wire, request.json)
        assert problems == [], f"request #{request.index}: {problems}\n{report}"
    assert {exchange.session_source for exchange in trip.exchanges} == {source}, report
    assert len({exchange.session for exchange in trip.exchanges}) == 1, report
    # One upstream request per client request, one more for the recall the gateway answered
    # itself, and the handover round of the session's first boundary.
    handovers = loop_policy(trip).handovers
    assert len(handovers) == 1, report
    assert len(trip.model_requests) == len(trip.exchanges) + 1 + len(handovers), report


def first_sigma(trip: Trip) -> int:
    """Position (among the model requests) of the first one holding the Σ message."""
    marker = SIGMA.encode()
    found = [i for i, r in enumerate(trip.model_requests) if marker in r.body]
    assert found, f"no request holds the Σ message\n{trip.report()}"
    return found[0]


def assert_collapsed(trip: Trip) -> None:
    """An epoch boundary happened: the engine reports an epoch whose spans are archived, the
    upstream heard the Σ message naming them, and the last request carried far fewer and far
    smaller tool results than the client's transcript held."""
    report = trip.report()
    state = trip.states[trip.exchanges[0].session]
    assert state is not None, report
    epoch = state["epoch"]
    assert epoch is not None and epoch["spans"], report
    refs = [span["ref"] for span in epoch["spans"]]
    assert set(refs) <= {entry["ref"] for entry in state["archive"]}, report
    sigma = trip.model_requests[first_sigma(trip) :]
    assert all(SIGMA.encode() in request.body for request in sigma), report
    for ref in refs:
        assert any(ref.encode() in request.body for request in sigma), report
    assert any(turn["where"] == "collapsed" for turn in state["turns"]), report
    assert state["context"]["tokens"]["collapsed"] > 0, report
    client = results(trip.exchanges[-1].request)
    upstream = upstream_results(trip.model_requests[-1])
    assert len(client) == TURNS and len(upstream) <= TURNS // 2, report
    assert sum(map(len, upstream)) * 2 <= sum(map(len, client)), report


def results(request: Request) -> list[str]:
    """The text of each tool result in a client's (canonical) request."""
    return [
        "".join(item.text for item in part.content if isinstance(item, Text))
        for message in request.messages
        for part in message.parts
        if isinstance(part, ToolResult)
    ]


def upstream_results(request: RecordedRequest) -> list[str]:
    assert request.wire is not None
    return [text for _, text in tool_outputs(request.wire, request.json)]


def assert_recalled(trip: Trip) -> None:
    """After the boundary the policy called ``recall`` for ``FACT``, which no request sent
    upstream held any more; the gateway answered from the archive (the next upstream request
    holds the result with the fact) and the client never saw the call or its result."""
    report = trip.report()
    policy = loop_policy(trip)
    assert len(policy.recalls) == 1 and len(policy.recalled) == 1, report
    call, answer = policy.recalls[0], policy.recalled[0]
    asked = trip.upstream.requests[call.request]
    assert call.request >= trip.model_requests[first_sigma(trip)].index, report
    assert FACT.encode() not in asked.body, report
    assert answer.request == call.request + 1 and FACT in answer.text, report
    assert "recall" not in trip.cli.stdout + trip.cli.stderr, report
    for exchange in trip.exchanges:
        for message in client_request(exchange).messages:
            for part in message.parts:
                assert not (isinstance(part, ToolCall) and part.name == "recall"), report
                assert not (isinstance(part, ToolResult) and part.call_id == call.id), report


def assert_sigma_marked(trip: Trip) -> None:
    """On an Anthropic upstream, the Σ message's text ends the stable prefix with a cache
    breakpoint in every request that holds it."""
    report = trip.report()
    for request in trip.model_requests[first_sigma(trip) :]:
        blocks = [
            block
            for message in request.json["messages"]
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if str(block.get("text", "")).startswith(SIGMA)
        ]
        assert len(blocks) == 1 and blocks[0].get("cache_control"), report


def assert_long_loop(trip: Trip, source: str) -> None:
    assert_loop_finished(trip)
    assert_clean_session(trip, source)
    assert_collapsed(trip)
    assert_recalled(trip)


async def test_codex_long_loop_collapses_and_recalls(codex: Path, tmp_path: Path) -> None:
    trip = await long_trip(codex_exec(codex, tmp_path))
    assert_long_loop(trip, source="codex")
    assert_codex_session(trip)


async def test_codex_long_loop_to_an_anthropic_upstream(codex: Path, tmp_path: Path) -> None:
    """Translated to Anthropic Messages, where the Σ message also carries a cache breakpoint
    (within the provider's limit, which ``wire_problems`` checks)."""
    trip = await long_trip(codex_exec(codex, tmp_path), wire="anthropic-messages")
    assert_long_loop(trip, source="codex")
    assert_translated(trip, Wire.RESPONSES, Wire.MESSAGES)
    assert_sigma_marked(trip)
    assert_codex_session(trip)


async def test_claude_code_long_loop_collapses_and_recalls(claude: Path, tmp_path: Path) -> None:
    trip = await long_trip(claude_print(claude, tmp_path))
    assert_long_loop(trip, source="claude-code")
    assert_sigma_marked(trip)
    assert_claude_result(trip)
