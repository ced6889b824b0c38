"""The history curve benchmark, small: a few turns of one session through a real gateway in
front of the mock provider (both on 127.0.0.1), and the rows it reports."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from skillstate.bench.history import History, main, measure


def test_each_turn_appends_about_three_kilobytes() -> None:
    history = History()
    sizes = [len(history.advance()) for _ in range(10)]
    steps = [b - a for a, b in itertools.pairwise(sizes)]
    assert all(2600 < step < 3100 for step in steps)
    assert len(history.messages) == 2 + 2 * 10
    ids = [m["tool_calls"][0]["id"] for m in history.messages if m["role"] == "assistant"]
    assert len(set(ids)) == 10


@pytest.mark.slow
def test_measure_reports_well_formed_rows() -> None:
    rows = measure(["off"], [2, 5], repeat=1)
    assert [(row.mode, row.turns) for row in rows] == [("off", 2), ("off", 5)]
    assert rows[0].body_bytes < rows[1].body_bytes
    for row in rows:
        assert row.cpu_ms > 0 and row.loads_ms > 0 and row.ratio > 0
        assert len(row.cpu_samples_ms) == 1


@pytest.mark.slow
def test_main_prints_the_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "history.json"
    main(["--turns", "1,3", "--modes", "hybrid", "--repeat", "2", "--json", str(out)])
    printed = capsys.readouterr().out
    assert "gateway CPU ms/req" in printed and "hybrid" in printed
    rows = json.loads(out.read_text())
    assert [row["turns"] for row in rows] == [1, 3]
    assert all(len(row["cpu_samples_ms"]) == 2 and row["ratio"] > 0 for row in rows)


@pytest.mark.slow
def test_the_memory_benchmark_reports_the_gateways_resident_memory() -> None:
    from skillstate.bench import memory

    got = memory.measure("hybrid", sessions=3, turns=2, idle=0.1)
    assert (got.sessions, got.turns) == (3, 2)
    assert 10 < got.start_mb <= got.after_mb * 1.5 and got.idle_mb > 10
    sent = memory.body(7, 3)["messages"]
    assert len(sent) == 2 + 2 * 3 and "Task 7" in sent[1]["content"]


@pytest.mark.parametrize("wire", ["chat", "messages", "responses"])
def test_each_wire_plays_the_same_loop_in_its_own_shape(wire: str) -> None:
    from skillstate.conversation import Wire
    from skillstate.protocols import adapter

    history = History(wire)
    sizes = [len(history.advance()) for _ in range(4)]
    assert all(2600 < b - a < 3300 for a, b in itertools.pairwise(sizes))
    wires = {"chat": Wire.CHAT, "messages": Wire.MESSAGES, "responses": Wire.RESPONSES}
    request = adapter(wires[wire]).decode_request(json.loads(history.body()))
    calls = [p for m in request.messages for p in m.parts if type(p).__name__ == "ToolCall"]
    assert [c.id for c in calls] == [f"call_{n:05d}" for n in range(1, 5)]
    assert request.tools[0].name == "read_file"


@pytest.mark.slow
def test_the_curve_runs_on_the_other_wires() -> None:
    rows = measure(["off"], [2], repeat=1, wires=("messages", "responses"))
    assert [row.wire for row in rows] == ["messages", "responses"]
    assert all(row.cpu_ms > 0 for row in rows)


def test_a_soak_session_starts_over_once_its_body_passes_a_megabyte() -> None:
    from skillstate.bench.history import History
    from skillstate.bench.memory import RESTART_BYTES, _Soaker

    soaker = _Soaker("http://127.0.0.1:9/v1/chat/completions", "hybrid", History())
    sizes, sessions = [], []
    for _ in range(400):
        sent, headers = soaker.next_body()
        sizes.append(len(sent))
        sessions.append(headers["x-skillstate-session"])
    assert max(sizes) <= RESTART_BYTES < max(sizes) + 3100
    restart = sessions.index("soak-2")
    assert 300 < restart < 400 and sizes[restart] < 4000
    assert set(sessions) == {"soak-1", "soak-2"}


def test_a_soak_is_flat_within_five_percent() -> None:
    from skillstate.bench.memory import Soak

    assert Soak("hybrid", 60, 10, 1, (100.0, 104.0, 102.0)).flat
    steady = Soak("hybrid", 60, 10, 1, (100.0, 104.0, 106.0))
    assert not steady.flat and abs(steady.ratio - 1.06) < 1e-9


@pytest.mark.slow
def test_the_memory_soak_samples_the_gateways_memory_once_warm(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from skillstate.bench import memory

    memory.main(["--soak", "3", "--warm", "1", "--every", "0.5", "--mode", "hybrid"])
    printed = capsys.readouterr().out
    assert "soak of 3 s" in printed and "max/min" in printed
    samples = printed.split("RSS MB once warm: ")[1].split(";")[0].split(", ")
    assert len(samples) >= 3 and all(float(mb) > 10 for mb in samples)
