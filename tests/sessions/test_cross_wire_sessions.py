"""Hybrid sessions served by an upstream of another wire: Codex traffic on an Anthropic
upstream (consecutive user messages merge there, tail note included) and Claude Code traffic
on a Responses upstream. The engine's rewriting and its internal tool loop (a ``recall``
answered from the archive) must hold across the translation."""

from __future__ import annotations

import pytest
from session_properties import (
    check_epochs,
    check_markers,
    check_pairs_and_head,
    check_probe,
    check_state,
)
from sessions_support import CLAUDE_HOST, CODEX_HOST, Host, play_session

from skillstate.testing.sessions import coding_plan

TURNS = 60


@pytest.mark.slow
@pytest.mark.parametrize(
    ("host", "upstream_wire"),
    [(CODEX_HOST, "anthropic-messages"), (CLAUDE_HOST, "openai-responses")],
    ids=["codex-on-anthropic", "claude-code-on-responses"],
)
async def test_a_session_on_another_wire_keeps_its_prefix_pairs_and_facts(
    host: Host, upstream_wire: str
) -> None:
    plan = coding_plan(TURNS, seed=3, instruction_turn=30, probe_turn=50, system_turn=40)
    settings = {"upstream_wire": upstream_wire}
    run = await play_session(host, plan, seed=3, settings=settings)
    assert {r.wire.value for r in run.requests if r.wire} == {upstream_wire}
    check_epochs(run, least=3)
    check_pairs_and_head(run)
    check_markers(run)
    check_probe(run, "recall")
    check_state(run, noted=False)
