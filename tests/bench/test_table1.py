"""The SKILL.state paper's Table 1 side by side: the warehouse in the paper's layout, its
Memory and Stateful baselines (a client carrying the model's notes), paper mode's flat prompt,
the table and its command."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from multidict import CIMultiDict, CIMultiDictProxy

from skillstate.bench.arms import ARMS, MEMORY_TURNS, Pricing
from skillstate.bench.run import play, prompt_chars
from skillstate.bench.table1 import PAPER_TOKENS, cells, markdown, verdict
from skillstate.bench.workload import NOTES_HEADING, Variant, notes_of, with_notes
from skillstate.bench.workloads import load, warehouse_paper
from skillstate.bench.workloads.warehouse import (
    MAX_LOTS,
    PAPER_TELEMETRY_HEADER,
    Inventory,
    Kind,
    build,
)
from skillstate.cli.main import cli
from skillstate.conversation import Wire
from skillstate.support import jsonio
from skillstate.testing.recording import RecordedRequest

# The paper's layout --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(1, 6))
def test_the_papers_layout_holds_at_most_max_lots_and_says_the_event_in_the_step(
    seed: int,
) -> None:
    session = load("warehouse-paper").build(200, seed)
    assert session.name == "warehouse-paper" and not session.tools and session.inline
    books = Inventory()
    for event in session.events:
        books.apply(event)
        assert sum(len(held) for held in books.cells.values()) <= MAX_LOTS
        if event.kind in (Kind.SHIP, Kind.MOVE):  # whole lots, never part of one
            assert books.qty(event.shelf, event.item) == 0
        assert event.text() in (session.instruction(event.step) or "")
    assert books.cells == session.truth.cells
    assert build(200, seed).events != session.events  # the observe layout's own generator


def test_the_papers_layout_puts_its_noise_under_the_papers_header_in_the_step() -> None:
    quiet, noisy = build(10, 1, paper_layout=True), build(10, 1, noise=5, paper_layout=True)
    assert quiet.events == noisy.events, "noise never changes the events"
    said = noisy.instruction(4) or ""
    assert said.startswith(quiet.instruction(4) or "")
    assert said.splitlines()[1] == PAPER_TELEMETRY_HEADER and len(said.splitlines()) == 7


def test_notes_round_trip_through_the_clients_message() -> None:
    message = with_notes('{"a": 1}', "Step 3/9: [step 3] Wait: nothing happens")
    assert message.startswith(NOTES_HEADING) and notes_of(message) == '{"a": 1}'
    assert notes_of("Answer: 4\n\nNotes:\n```json\n{}\n```\nNotes:\n```json\n[2]\n```") == "[2]"
    assert notes_of("no notes here") is None


# The baselines and paper mode, played --------------------------------------------------------


async def test_memory_carries_the_models_notes_beside_its_last_turns_only() -> None:
    session = load("warehouse-paper").build(40, 2)
    kept = await play(session, ARMS["memory"], Pricing.OPENAI)
    forgot = await play(session, ARMS["memory"], Pricing.OPENAI, variant=Variant.CARELESS)
    react = await play(session, ARMS["passthrough"], Pricing.OPENAI)
    assert kept.completed and kept.score == 1.0 and react.score == 1.0
    assert forgot.score < 0.5, "without its notes the last 3 turns do not hold the answers"
    # one request per step; the window stays: the last request is a few turns, not forty
    assert len(kept.requests) == 40
    assert kept.requests[-1].prompt_chars < react.requests[-1].prompt_chars / 2
    assert MEMORY_TURNS == 3


async def test_stateful_sends_the_notes_and_the_whole_history() -> None:
    session = load("warehouse-paper").build(30, 1)
    stateful = await play(session, ARMS["stateful"], Pricing.OPENAI)
    react = await play(session, ARMS["passthrough"], Pricing.OPENAI)
    assert stateful.score == 1.0
    assert all(
        mine.prompt_chars > theirs.prompt_chars
        for mine, theirs in zip(stateful.requests[1:], react.requests[1:], strict=True)
    )


@pytest.mark.parametrize("pricing", list(Pricing))
async def test_paper_modes_prompt_is_flat_with_the_horizon(pricing: Pricing) -> None:
    """The warehouse's schema (its ``settings``) reaches the gateway, so an emptied shelf
    leaves Σ; ``recall`` is not offered where nothing was archived: the prompt per call at
    T=150 is within 1.2x of T=10's, at full score."""
    short = await play(load("warehouse-paper").build(10, 3), ARMS["paper"], pricing)
    long = await play(load("warehouse-paper").build(150, 3), ARMS["paper"], pricing)
    assert short.score == long.score == 1.0 and long.retries == 0

    def per_call(run: object) -> float:
        requests = run.requests  # type: ignore[attr-defined]
        return sum(r.prompt_chars for r in requests) / len(requests)

    assert per_call(long) <= 1.2 * per_call(short)
    assert max(r.prompt_tokens for r in long.requests) < 600


def test_prompt_chars_counts_what_the_model_reads() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": "abcd"}, {"role": "user", "content": "xy"}],
        "tools": [{"type": "function", "function": {"name": "t", "parameters": {}}}],
    }
    headers = CIMultiDictProxy(CIMultiDict())
    recorded = RecordedRequest(
        0, "POST", "/v1/chat/completions", {}, headers, jsonio.dumps(body), body, Wire.CHAT
    )
    assert prompt_chars(recorded) == 4 + 2 + len(jsonio.dumps(body["tools"]))


# The table -----------------------------------------------------------------------------------


async def test_the_table_puts_ours_beside_the_papers_and_says_its_verdict() -> None:
    runs = [
        await play(load("warehouse-paper").build(horizon, seed), ARMS[arm], Pricing.OPENAI)
        for horizon in (10, 50)
        for seed in (1, 2)
        for arm in ("passthrough", "paper")
    ]
    found = cells(runs)
    assert [(c.horizon, c.arm, c.seeds) for c in found] == [
        (10, "passthrough", 2),
        (10, "paper", 2),
        (50, "passthrough", 2),
        (50, "paper", 2),
    ]
    paper50 = found[3]
    assert paper50.fewer is not None and paper50.fewer_low <= paper50.fewer <= paper50.fewer_high
    assert paper50.fewer > 2 and paper50.accuracy == 1.0
    table = markdown(found)
    assert f"| {PAPER_TOKENS[50]['paper']:,} |" in table  # the paper's figure beside ours
    assert "SKILL.state (paper mode)" in table and "ReAct (passthrough)" in table
    said = verdict(found)
    assert "T=10" in said and "T=50" in said and "target is not met" in said


def test_the_command_runs_the_table_and_writes_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["bench", "table1", "--horizon", "6", "--seed", "1", "--out", str(tmp_path)]
    )
    assert "Noise: 5 telemetry lines per step." in result.output
    assert result.exit_code == 0, result.output
    table = (tmp_path / "table1.md").read_text()
    for name in ("ReAct", "Memory", "Stateful", "SKILL.state"):
        assert f"| 6 | {name}" in table
    assert (tmp_path / "results.jsonl").stat().st_size > 0
    assert (tmp_path / "table1.png").exists() or "not drawn" in result.output
    bad = CliRunner().invoke(cli, ["bench", "table1", "--horizon", "0"])
    assert bad.exit_code == 2 and "positive" in bad.output


async def test_with_the_papers_noise_paper_mode_sends_16x_fewer_input_tokens_at_t200() -> None:
    """Issue 29's target on the paper's setting (5 telemetry lines per step): at T=200 paper
    mode sends at least 16x fewer input tokens than pass-through, at equal score, its prompt
    per call within 1.2x of T=10's."""
    session = warehouse_paper.build(200, 4, noise=warehouse_paper.TABLE_NOISE)
    react = await play(session, ARMS["passthrough"], Pricing.OPENAI)
    paper = await play(session, ARMS["paper"], Pricing.OPENAI)
    short = await play(
        warehouse_paper.build(10, 4, noise=warehouse_paper.TABLE_NOISE),
        ARMS["paper"],
        Pricing.OPENAI,
    )
    found = {c.arm: c for c in cells([react, paper]) if c.horizon == 200}
    assert found["paper"].accuracy == found["passthrough"].accuracy == 1.0
    assert found["paper"].fewer is not None and found["paper"].fewer >= 16
    (small,) = cells([short])
    assert found["paper"].prompt_chars <= 1.2 * small.prompt_chars
