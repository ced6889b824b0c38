"""Codex CLI through the gateway: a task with one ``exec_command`` round trip, on its own wire
(OpenAI Responses) and translated to an Anthropic Messages upstream."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from e2e_support import (
    TOOLS_AT_ONCE,
    Invocation,
    Trip,
    assert_round_trip,
    assert_same_wire,
    assert_state_lane,
    assert_translated,
    base_env,
    round_trip,
)

from skillstate.conversation import Wire

pytestmark = pytest.mark.e2e

PROMPT = "Print the end-to-end marker with your shell tool."

# Top-level keys must come before any table, or they land inside it. Analytics off saves about
# 5 s of DNS lookups at exit; no retries, so a broken reply fails the run at once.
CONFIG = """\
model = "{model}"
model_provider = "gw"

[model_providers.gw]
name = "gateway"
base_url = "{base_url}"
env_key = "GW_API_KEY"
wire_api = "responses"{provider}
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
"""


def codex_exec(binary: Path, home: Path, provider: str = "") -> Callable[[str], Invocation]:
    """``codex exec`` against a gateway URL, with its own CODEX_HOME under ``home``
    (``provider``: more lines of its provider table)."""

    def build(gateway: str) -> Invocation:
        codex_home = home / "codex"
        work = home / "work"
        codex_home.mkdir()
        work.mkdir()
        (codex_home / "config.toml").write_text(
            CONFIG.format(model="test-model", base_url=gateway + "/v1", provider=provider)
        )
        env = {**base_env(home), "CODEX_HOME": str(codex_home), "GW_API_KEY": "sk-test"}
        return Invocation([str(binary), "exec", "--skip-git-repo-check", PROMPT], env, work)

    return build


def assert_codex_session(trip: Trip) -> None:
    """Codex called ``exec_command``, and the session is the one Codex announces on stderr."""
    report = trip.report()
    assert trip.policy.calls[0].name == "exec_command", report
    assert f"session id: {trip.exchanges[0].session}\n" in trip.cli.stderr, report


async def test_codex_round_trip_on_its_own_wire(codex: Path, tmp_path: Path) -> None:
    trip = await round_trip(codex_exec(codex, tmp_path), mode="off")
    assert_round_trip(trip, source="codex")
    assert_same_wire(trip, Wire.RESPONSES, signal="session-id")
    assert_codex_session(trip)


async def test_codex_round_trip_to_an_anthropic_upstream(codex: Path, tmp_path: Path) -> None:
    trip = await round_trip(
        codex_exec(codex, tmp_path), wire="anthropic-messages", collapse=TOOLS_AT_ONCE
    )
    assert_round_trip(trip, source="codex")
    assert_state_lane(trip)
    assert_translated(trip, Wire.RESPONSES, Wire.MESSAGES)
    assert_codex_session(trip)
