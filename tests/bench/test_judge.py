"""The load tests' judge (``bench/judge.whole``, which bench/flaky.py and bench/faults.py
count by): what counts as a whole reply on each wire, so that a silent truncation is counted as
one."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from skillstate.bench.judge import whole


def _sse(*events: str) -> bytes:
    return "".join(f"{event}\n\n" for event in events).encode()


CHAT_DONE = _sse('data: {"choices":[{"delta":{},"finish_reason":"stop"}]}', "data: [DONE]")
CHAT_CUT = _sse('data: {"choices":[{"delta":{"content":"hi"},"finish_reason":null}]}')
MESSAGES_DONE = _sse("event: content_block_start\ndata: {}", "event: message_stop\ndata: {}")
MESSAGES_CUT = _sse("event: content_block_start\ndata: {}")
RESPONSES_DONE = _sse('event: response.completed\ndata: {"type":"response.completed"}')
RESPONSES_CUT = _sse('event: response.output_item.added\ndata: {"type":"x"}')


@pytest.mark.parametrize(
    ("wire", "stream", "raw", "outcome"),
    [
        ("chat", False, json.dumps({"choices": [{"finish_reason": "stop"}]}), "ok"),
        ("chat", False, '{"choices": [{"finish_reason": "st', "truncated"),
        ("chat", False, json.dumps({"choices": [{"finish_reason": None}]}), "truncated"),
        ("messages", False, json.dumps({"stop_reason": "end_turn"}), "ok"),
        ("messages", False, json.dumps({"stop_reason": None}), "truncated"),
        ("responses", False, json.dumps({"status": "completed"}), "ok"),
        ("responses", False, json.dumps({"status": "in_progress"}), "truncated"),
        ("chat", True, CHAT_DONE, "ok"),
        ("chat", True, CHAT_CUT, "truncated"),
        ("messages", True, MESSAGES_DONE, "ok"),
        ("messages", True, MESSAGES_CUT, "truncated"),
        ("messages", True, MESSAGES_CUT + _sse("event: error\ndata: {}"), "failed"),
        ("responses", True, RESPONSES_DONE, "ok"),
        ("responses", True, RESPONSES_CUT, "truncated"),
    ],
)
def test_a_200_is_whole_only_when_its_wire_says_so(
    wire: str, stream: bool, raw: str | bytes, outcome: str
) -> None:
    data = raw.encode() if isinstance(raw, str) else raw
    assert whole(wire, 200, stream, data) == outcome


def test_an_error_is_well_formed_only_in_the_wires_shape() -> None:
    assert whole("chat", 502, False, b'{"error": {"message": "x"}}') == "failed"
    assert whole("chat", 502, True, b"Bad Gateway") == "malformed"


@pytest.mark.parametrize("fallback", [False, True])
def test_the_flaky_load_runs_and_passes_its_verdicts(fallback: bool) -> None:
    """``python -m skillstate.bench.flaky``, short: a real gateway process in front of the
    flaky scripted upstream, the direct client beside it; every verdict holds (the served
    floor included: 85% at 25% faults, 98% with a healthy fallback)."""
    argv = [sys.executable, "-m", "skillstate.bench.flaky", "--seconds", "3", "--clients", "16"]
    if fallback:
        argv.append("--fallback")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    floor = "98%" if fallback else "85%"
    assert f"ok   at least {floor} served" in done.stdout
    assert "silent truncations 0" in done.stdout.split("gateway", 1)[1]
