"""Claude Code through the gateway: a task with one ``Bash`` round trip, on its own wire
(Anthropic Messages) and translated to an OpenAI Chat Completions upstream."""

from __future__ import annotations

import json
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


def claude_env(home: Path, gateway: str) -> dict[str, str]:
    """Claude Code's environment against the gateway at ``gateway``: no title request and no
    telemetry (nonessential traffic off), and no retries."""
    return {
        **base_env(home),
        "ANTHROPIC_BASE_URL": gateway,
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


def claude_print(binary: Path, home: Path) -> Callable[[str], Invocation]:
    """``claude -p`` against a gateway URL. No title request and no telemetry (nonessential
    traffic off), and no retries, so a broken reply fails the run at once."""

    def build(gateway: str) -> Invocation:
        work = home / "work"
        work.mkdir()
        env = claude_env(home, gateway)
        argv = [str(binary), "-p", PROMPT, "--allowedTools", "Bash", "--output-format", "json"]
        return Invocation(argv, env, work)

    return build


def assert_claude_result(trip: Trip) -> None:
    """Claude Code's JSON result: the final text, no error, and the session id the gateway
    resolved (Claude Code reports the id it sent in ``X-Claude-Code-Session-Id``)."""
    report = trip.report()
    result = json.loads(trip.cli.stdout)
    assert result["is_error"] is False, report
    assert result["result"] == trip.policy.final_text, report
    assert result["session_id"] == trip.exchanges[0].session, report
    assert trip.policy.calls[0].name == "Bash", report


async def test_claude_code_round_trip_on_its_own_wire(claude: Path, tmp_path: Path) -> None:
    trip = await round_trip(claude_print(claude, tmp_path), mode="off")
    assert_round_trip(trip, source="claude-code")
    assert_same_wire(trip, Wire.MESSAGES, signal="x-claude-code-session-id")
    assert_claude_result(trip)


async def test_claude_code_round_trip_to_a_chat_upstream(claude: Path, tmp_path: Path) -> None:
    trip = await round_trip(
        claude_print(claude, tmp_path), wire="openai-chat", collapse=TOOLS_AT_ONCE
    )
    assert_round_trip(trip, source="claude-code")
    assert_state_lane(trip)
    assert_translated(trip, Wire.MESSAGES, Wire.CHAT)
    assert_claude_result(trip)
