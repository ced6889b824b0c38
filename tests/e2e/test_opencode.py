"""OpenCode through the gateway: a task with one ``bash`` round trip, on its own wire (OpenAI
Chat Completions) and translated to an OpenAI Responses upstream. OpenCode also sends a title
request (no tools) first; it travels through the gateway like the others."""

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

# Separate words: `opencode run` quotes any argument that holds a space.
PROMPT = ["Print", "the", "end-to-end", "marker", "with", "your", "shell", "tool."]


def opencode_run(binary: Path, home: Path) -> Callable[[str], Invocation]:
    """``opencode run`` in a project whose opencode.json points at a gateway URL. OpenCode finds
    its project through ``PWD``, not the working directory, so both are set. It has no retry
    setting: an upstream 5xx makes it back off for about a minute before it fails."""

    def build(gateway: str) -> Invocation:
        project = home / "proj"
        project.mkdir()
        config = {
            "provider": {
                "gw": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "gateway",
                    "options": {"baseURL": gateway + "/v1", "apiKey": "sk-test"},
                    "models": {"test-model": {"name": "test model"}},
                }
            },
            "model": "gw/test-model",
            "autoupdate": False,
            "share": "disabled",
        }
        (project / "opencode.json").write_text(json.dumps(config))
        env = {
            **base_env(home),
            "PWD": str(project),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            # It fetches plugin metadata from the npm registry on every run, even with --pure;
            # a closed loopback port keeps the run offline and costs nothing.
            "NPM_CONFIG_REGISTRY": "http://127.0.0.1:9/",
        }
        argv = [str(binary), "run", "--pure", "--auto", "-m", "gw/test-model", *PROMPT]
        return Invocation(argv, env, project)

    return build


def assert_opencode_run(trip: Trip, home: Path) -> None:
    """OpenCode called ``bash``; its title request (no tools; it usually comes first, but runs
    beside the main turn) was answered as a side request and counted in the same session, the
    one OpenCode's own log names."""
    report = trip.report()
    assert len(trip.policy.side) == 1, report
    assert trip.policy.calls[0].name == "bash", report
    log = home / ".local" / "share" / "opencode" / "log" / "opencode.log"
    assert trip.exchanges[0].session in log.read_text(errors="replace"), report


async def test_opencode_round_trip_on_its_own_wire(opencode: Path, tmp_path: Path) -> None:
    trip = await round_trip(opencode_run(opencode, tmp_path), mode="off")
    assert_round_trip(trip, source="opencode")
    assert_same_wire(trip, Wire.CHAT, signal="x-session-id")
    assert_opencode_run(trip, tmp_path)


async def test_opencode_round_trip_to_a_responses_upstream(opencode: Path, tmp_path: Path) -> None:
    trip = await round_trip(
        opencode_run(opencode, tmp_path), wire="openai-responses", collapse=TOOLS_AT_ONCE
    )
    assert_round_trip(trip, source="opencode")
    assert_state_lane(trip)
    assert_translated(trip, Wire.CHAT, Wire.RESPONSES)
    assert_opencode_run(trip, tmp_path)
