"""``skillstate bench overhead`` against the bare forwarder (issue 28's figures): the table's
ratios and verdicts on fake measurements, and one short real run whose table has every figure
and whose CPU per request, read from each server's own accounting, is a positive number."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillstate.bench.floor import SPECS, figures, format_floor
from skillstate.bench.load import Row
from skillstate.bench.peers import Cell, Workload
from skillstate.cli.main import cli


def _row(arm: str, stream: bool, conc: int, p50: float, rps: float, cpu: float) -> Row:
    ttfb = p50 if stream else None
    return Row(arm, stream, conc, 100, rps, p50, p50 * 2, ttfb, ttfb and ttfb * 2, cpu)


def _cells() -> list[Cell]:
    # direct p50 1 ms; the forwarder adds 0.4 ms, off 0.5 ms (1.25x), hybrid 0.8 ms (2x).
    cells = []
    for stream in (False, True):
        for conc, rps in ((1, 1000.0), (64, 2000.0)):
            for arm, p50, share, cpu in (
                ("direct", 1.0, 1.0, 0.0),
                ("forwarder", 1.4, 0.5, 0.3),
                ("off", 1.5, 0.4, 0.6),
                ("hybrid", 1.8, 0.2, 0.9),
            ):
                cells.append(Cell(Workload.SHORT, _row(arm, stream, conc, p50, rps * share, cpu)))
    return cells


def test_each_figure_is_a_ratio_to_the_forwarder_judged_against_its_target() -> None:
    found = {f.spec.name: f for f in figures(_cells())}
    assert list(found) == [spec.name for spec in SPECS]
    p50 = found["added p50 ms, plain, c=1"]
    assert p50.values["off"] == pytest.approx(0.5)
    assert p50.ratios["off"] == pytest.approx(1.25) and p50.verdict("off") is True
    assert p50.ratios["hybrid"] == pytest.approx(2.0) and p50.verdict("hybrid") is False
    assert p50.verdict("forwarder") is None
    rps = found["req/s, plain, c=64"]
    assert rps.ratios["off"] == pytest.approx(0.8) and rps.verdict("off") is True
    cpu = found["CPU ms/request, stream, c=1"]
    assert cpu.ratios["off"] == pytest.approx(2.0) and cpu.verdict("off") is None


def test_the_table_shows_every_figure_and_hybrid_against_off() -> None:
    text = "\n".join(format_floor(_cells()))
    for spec in SPECS:
        assert spec.name in text
    assert "1.25x ok" in text and "2.00x MISS" in text
    assert "hybrid / off, added p50 ms, plain, c=1: 1.60x (target <= 1.1x): MISS" in text
    assert "hybrid / off, req/s, plain, c=64: 0.50x (target >= 0.9x): MISS" in text


def test_hybrid_better_than_off_is_no_miss() -> None:
    """The bound is one-sided: hybrid may be faster than off, never more than 10% slower."""
    faster = []
    for cell in _cells():
        if cell.row.arm == "hybrid":
            row = dataclasses.replace(cell.row, rps=cell.row.rps * 2.5, p50_ms=1.45)
            cell = dataclasses.replace(cell, row=row)
        faster.append(cell)
    text = "\n".join(format_floor(faster))
    assert "hybrid / off, req/s, plain, c=64: 1.25x (target >= 0.9x): ok" in text
    assert "hybrid / off, added p50 ms, plain, c=1: 0.90x (target <= 1.1x): ok" in text


def test_without_the_forwarder_there_is_no_table() -> None:
    cells = [c for c in _cells() if c.row.arm != "forwarder"]
    assert format_floor(cells) == []


def test_a_short_run_reports_every_figure_and_positive_cpu(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    args = ["bench", "overhead", "--arm", "forwarder", "--arm", "off"]
    args += ["--seconds", "0.5", "--rounds", "1", "--litellm-venv", str(tmp_path)]
    result = CliRunner().invoke(cli, [*args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "against the bare forwarder" in result.output
    for spec in SPECS:
        assert spec.name in result.output
    written = json.loads(out.read_text())
    cpu = {
        (c["arm"], c["stream"]): c["cpu_ms"]
        for c in written["cells"]
        if c["concurrency"] == 1 and c["arm"] != "direct"
    }
    assert set(cpu) == {(arm, s) for arm in ("forwarder", "off") for s in (False, True)}
    assert all(isinstance(ms, float) and ms > 0 for ms in cpu.values()), cpu
    names = [f["figure"] for f in written["against_forwarder"]]
    assert names == [spec.name for spec in SPECS]
