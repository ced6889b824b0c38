"""The same long session passed through: with ``x-skillstate-mode: off`` the gateway forwards
every request byte for byte (DESIGN.md, invariant 6), also once the client's history is past
a megabyte, and keeps no state for the session."""

from __future__ import annotations

import pytest
from sessions_support import CODEX_HOST, play_session

from skillstate.testing.session_clients import body_digest
from skillstate.testing.sessions import coding_plan

TURNS = 120
#: aiohttp's default limit on a request body, and the size past which it warns about writing
#: a bytes body in one piece.
ONE_MIB = 1024 * 1024


@pytest.mark.slow
async def test_a_long_session_passed_through_reaches_the_upstream_byte_for_byte() -> None:
    plan = coding_plan(150, seed=3)
    off = {"x-skillstate-mode": "off"}
    run = await play_session(CODEX_HOST, plan, seed=3, turns=TURNS, headers=off)
    assert max(run.log.sizes) > ONE_MIB
    assert [body_digest(r.body) for r in run.requests] == run.log.digests
    assert run.described is None
    assert run.errors == []
