"""150-turn coding sessions in hybrid mode, shaped like real Codex (Responses) and Claude Code
(Anthropic) traffic, through the gateway in front of a scripted model.

Each test plays one whole session, then checks what went upstream:

* every request stays under a fixed token bound while the client's transcript grows far past
  it, and by turn 100 the request is under a third of the transcript;
* within an epoch, each request extends the previous one (the contract of
  ``session_checks.prefix_break``), several epochs happen, and no request splits a tool pair;
* the session's first instruction is in every request;
* a fact seen only in turn 5 is answered at turn 140 from what the model was sent: through
  ``recall`` (Codex: the model never wrote it into Σ) or through Σ (Claude Code: it did);
* the client never sees an internal call, and Σ ends holding every patch the model made.
"""

from __future__ import annotations

import pytest
from session_properties import (
    check_epochs,
    check_markers,
    check_pairs_and_head,
    check_probe,
    check_size,
    check_state,
)
from sessions_support import CLAUDE_HOST, CODEX_HOST, play_session

from skillstate.testing.session_checks import messages_of
from skillstate.testing.sessions import coding_plan

TURNS = 150
SEED = 3
#: The most tokens one upstream request of these sessions may hold (a 128k context window):
#: the host's system prompt and tools (about 20k tokens for Claude Code) plus the epoch
#: threshold, which grows with the four turns a boundary keeps (here up to two 50 KB reads).
#: The client's transcript ends more than three times larger.
OUTBOUND_BOUND = 128_000


@pytest.mark.slow
async def test_a_codex_shaped_session_stays_bounded_and_recalls_an_early_fact() -> None:
    plan = coding_plan(TURNS, seed=SEED, note_fact=False)
    run = await play_session(CODEX_HOST, plan, seed=SEED, keep=(100, TURNS))
    check_size(run, OUTBOUND_BOUND)
    check_epochs(run, least=5)
    check_pairs_and_head(run)
    check_probe(run, "recall")
    check_state(run, noted=False)


@pytest.mark.slow
async def test_a_claude_code_shaped_session_stays_bounded_and_keeps_a_fact_in_state() -> None:
    plan = coding_plan(TURNS, seed=SEED, note_fact=True, system_turn=80)
    run = await play_session(CLAUDE_HOST, plan, seed=SEED, keep=(100, TURNS))
    check_size(run, OUTBOUND_BOUND)
    check_epochs(run, least=5)
    check_pairs_and_head(run)
    check_probe(run, "state")
    check_state(run, noted=True)
    check_markers(run)
    turn_80 = messages_of(run.turn_request(80))
    assert {"role": "system", "content": plan.system_notes[80]} in turn_80
