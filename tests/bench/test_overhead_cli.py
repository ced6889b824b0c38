"""``skillstate bench overhead``: which arms run, its options, and its report, on fake
measurements (no server is started, no load is sent, LiteLLM need not be installed)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillstate.bench import peers
from skillstate.bench.litellm_proxy import installed_version
from skillstate.bench.load import Row
from skillstate.bench.peers import Arm, Cell, Report, Workload, plan
from skillstate.bench.peers_report import added, format_report, verdicts
from skillstate.cli.bench_overhead import ARMS
from skillstate.cli.main import cli


def test_the_cli_offers_every_arm_the_benchmark_knows() -> None:
    assert tuple(arm.value for arm in Arm) == ARMS


def test_all_arms_by_default_on_both_workloads() -> None:
    chosen = plan([], "1.0")
    assert chosen.arms == (Arm.DIRECT, Arm.FORWARDER, Arm.OFF, Arm.HYBRID, Arm.LITELLM)
    assert chosen.workloads == (Workload.SHORT, Workload.LONG)
    # On the short request hybrid is a session before its first boundary.
    assert chosen.arms_for(Workload.SHORT) == chosen.arms
    assert chosen.arms_for(Workload.LONG) == chosen.arms
    assert chosen.notes == ()


def test_without_litellm_the_other_arms_run_and_it_says_so() -> None:
    chosen = plan([], None)
    assert chosen.arms == (Arm.DIRECT, Arm.FORWARDER, Arm.OFF, Arm.HYBRID)
    assert any("not installed" in note and "make peers" in note for note in chosen.notes)


def test_direct_always_runs_and_the_long_session_only_with_hybrid() -> None:
    chosen = plan(["litellm", "off"], "1.0")
    assert chosen.arms == (Arm.DIRECT, Arm.OFF, Arm.LITELLM)
    assert chosen.workloads == (Workload.SHORT,)
    assert any("baseline" in note for note in chosen.notes)
    assert plan(["direct", "hybrid"], None).workloads == (Workload.SHORT, Workload.LONG)
    both = plan(["forwarder", "hybrid"], None)
    assert both.arms_for(Workload.SHORT) == (Arm.DIRECT, Arm.FORWARDER, Arm.HYBRID)
    assert both.arms_for(Workload.LONG) == (Arm.DIRECT, Arm.FORWARDER, Arm.HYBRID)


def test_an_empty_folder_has_no_litellm(tmp_path: Path) -> None:
    assert installed_version(tmp_path) is None


def _row(arm: str, stream: bool, conc: int, rps: float, p50: float) -> Row:
    ttfb = p50 * 0.9 if stream else None
    return Row(arm, stream, conc, int(rps * 4), rps, p50, p50 * 2, ttfb, ttfb and ttfb * 2)


def _fake_report(peer: bool = True) -> Report:
    # direct p50 1 ms; off adds 0.2 ms; litellm adds 2 ms (ratio 0.1, met) at c=1 and 4 ms
    # at c=64 while off adds 2 ms there (0.5, missed); throughput at c=64: 300 vs 100 (3x).
    cells = []
    for stream in (False, True):
        for conc, direct_rps in ((1, 1000.0), (64, 900.0)):
            cells.append(Cell(Workload.SHORT, _row("direct", stream, conc, direct_rps, 1.0)))
            ours = 1.2 if conc == 1 else 3.0
            cells.append(Cell(Workload.SHORT, _row("off", stream, conc, 300.0, ours)))
            if peer:
                theirs = 3.0 if conc == 1 else 5.0
                cells.append(Cell(Workload.SHORT, _row("litellm", stream, conc, 100.0, theirs)))
    rss = {"off": 120.0, "litellm": 370.0} if peer else {"off": 120.0}
    return Report(cells, rss, ["a note"], "1.108.6" if peer else None, 120, 500.0, 2)


def test_added_is_each_arm_minus_direct_in_the_same_cell() -> None:
    found = {(a.arm, a.stream, a.concurrency): a for a in added(_fake_report().cells)}
    off = found[("off", False, 1)]
    assert off.p50_ms == pytest.approx(0.2)
    assert off.throughput == pytest.approx(0.3)
    assert found[("litellm", True, 64)].ttfb_p50_ms == pytest.approx(3.6)
    assert ("direct", False, 1) not in found


def test_verdicts_judge_both_targets_and_say_by_how_much_one_is_missed() -> None:
    report = _fake_report()
    judged = {v.what: v for v in verdicts(added(report.cells), report.cells)}
    c1 = judged["short off plain c=1 added p50 / LiteLLM's"]
    assert c1.ratio == pytest.approx(0.1) and c1.met
    c64 = judged["short off plain c=64 added p50 / LiteLLM's"]
    assert c64.ratio == pytest.approx(0.5) and not c64.met
    assert "missed by 2.0x" in c64.line()
    rps = judged["short off stream c=64 req/s / LiteLLM's"]
    assert rps.ratio == pytest.approx(3.0) and rps.met
    assert not any("c=1 req/s" in what for what in judged)


def test_the_report_shows_cells_added_ratios_rss_and_notes() -> None:
    text = format_report(_fake_report())
    assert "long session: 120 tool steps, 500 KB" in text
    rows = [line.split() for line in text.splitlines()]
    assert ["short", "litellm", "plain", "64", "400", "100"] in [r[:6] for r in rows]
    assert "added over direct" in text
    assert "against LiteLLM 1.108.6" in text
    assert "4 of 6 met" in text
    assert "off 120 MB, litellm 370 MB" in text
    assert "note: a note" in text


def test_without_a_peer_the_report_has_no_ratios() -> None:
    text = format_report(_fake_report(peer=False))
    assert "against LiteLLM" not in text
    assert "added over direct" in text


def test_help_names_the_arms_and_options() -> None:
    result = CliRunner().invoke(cli, ["bench", "overhead", "--help"])
    assert result.exit_code == 0, result.output
    for word in (
        "direct",
        "forwarder",
        "hybrid",
        "litellm",
        "--arm",
        "--seconds",
        "--turns",
        "--json",
    ):
        assert word in result.output


def test_a_bad_arm_is_refused_by_name() -> None:
    result = CliRunner().invoke(cli, ["bench", "overhead", "--arm", "nginx"])
    assert result.exit_code == 2
    assert "nginx" in result.output


def test_the_command_passes_its_options_and_prints_and_writes_the_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[tuple[Sequence[str], Path, float, int, int]] = []

    def fake_run(
        chosen: Sequence[str], venv: Path, seconds: float, rounds: int, turns: int
    ) -> Report:
        calls.append((chosen, venv, seconds, rounds, turns))
        return _fake_report()

    monkeypatch.setattr(peers, "run", fake_run)
    out = tmp_path / "run.json"
    args = ["bench", "overhead", "--arm", "off", "--arm", "litellm", "--seconds", "1"]
    args += ["--rounds", "2", "--turns", "30", "--litellm-venv", str(tmp_path), "--json", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert calls == [(("off", "litellm"), tmp_path, 1.0, 2, 30)]
    assert "against LiteLLM 1.108.6" in result.output
    written = json.loads(out.read_text())
    assert written["litellm_version"] == "1.108.6"
    assert {c["arm"] for c in written["cells"]} == {"direct", "off", "litellm"}
