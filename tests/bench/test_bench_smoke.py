"""``skillstate bench`` end to end, small: the accumulation workload for a few turns on every
arm under both pricings, through the CLI, and what it leaves in its directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillstate.bench.arms import ARMS, DEFAULT_ARMS, Pricing
from skillstate.bench.run import play
from skillstate.bench.workload import Variant
from skillstate.bench.workloads import WORKLOADS, available, load, problems
from skillstate.cli.main import cli

HORIZON = 14  # 13 files: longer than the sliding window's 6 turns


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    result = CliRunner().invoke(
        cli, ["bench", "accumulation", "--horizon", str(HORIZON), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    runs = len(DEFAULT_ARMS) * len(Pricing)
    assert "skillstate bench" in result.output and f"{runs} runs" in result.output
    return out


def summary(out: Path) -> dict[tuple[str, str], dict[str, object]]:
    rows = json.loads((out / "summary.json").read_text())
    return {(row["arm"], row["pricing"]): row for row in rows}


def test_every_file_is_written_and_parses(bench: Path) -> None:
    lines = [json.loads(line) for line in (bench / "results.jsonl").read_text().splitlines()]
    runs = [line for line in lines if line["kind"] == "run"]
    assert len(runs) == len(DEFAULT_ARMS) * len(Pricing)
    assert all(run["completed"] and run["revision"] for run in runs)
    assert {line["kind"] for line in lines} == {"run", "request"}
    rows = summary(bench)
    assert set(rows) == {(arm, p.value) for arm in DEFAULT_ARMS for p in Pricing}
    for row in rows.values():
        assert {"workload", "arm", "horizon", "pricing", "input_tokens", "cost", "score",
                "recall", "violations", "claim"} <= set(row)  # fmt: skip
    report = (bench / "report.md").read_text()
    assert "| hybrid |" in report and "## accumulation, horizon 14" in report
    assert len(list(bench.glob("*.png"))) == 3 * len(Pricing)


def test_every_arm_gets_a_claim_or_a_reason(bench: Path) -> None:
    starts = ("baseline", "reference (no gateway)", "saves ", "loss: ", "no change: ", "no claim: ")
    for (arm, _), row in summary(bench).items():
        claim = str(row["claim"])
        assert claim.startswith(starts), (arm, claim)
        if claim.startswith("no claim"):
            assert len(claim) > len("no claim: ")


def test_no_arm_splits_a_tool_pair(bench: Path) -> None:
    assert all(row["violations"] == 0 for row in summary(bench).values())


def test_direct_and_passthrough_cost_the_same(bench: Path) -> None:
    rows = summary(bench)
    for pricing in Pricing:
        direct, passthrough = rows["direct", pricing.value], rows["passthrough", pricing.value]
        assert direct["input_tokens"] == passthrough["input_tokens"]
        assert abs(float(direct["cost"]) - float(passthrough["cost"])) < 1e-6  # type: ignore[arg-type]


def test_the_sliding_window_loses_values_and_hybrid_keeps_them_all(bench: Path) -> None:
    rows = summary(bench)
    for pricing in Pricing:
        assert float(rows["sliding-window", pricing.value]["recall"]) < 1.0  # type: ignore[arg-type]
        assert rows["hybrid", pricing.value]["recall"] == 1.0
        assert rows["hybrid", pricing.value]["score"] == 1.0


async def test_a_careless_model_in_hybrid_finds_what_was_collapsed_through_recall() -> None:
    workload = load("accumulation").build(31, 1)
    record = await play(workload, ARMS["hybrid"], Pricing.OPENAI, variant=Variant.CARELESS)
    assert record.completed and record.score == 1.0 and record.violations == 0
    assert "recall" in record.sources.values() and record.archive_bytes > 0


def test_a_workload_whose_module_is_missing_leaves_the_others_usable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(WORKLOADS, "nowhere", "skillstate.bench.workloads.nowhere")
    assert "nowhere" in problems()
    assert "nowhere" not in [entry.name for entry in available()]
    assert "accumulation" in [entry.name for entry in available()]


def test_bench_is_a_group_whose_default_is_run() -> None:
    result = CliRunner().invoke(cli, ["bench", "--help"])
    assert result.exit_code == 0 and "run" in result.output
    result = CliRunner().invoke(cli, ["bench", "--arms", "nope"])
    assert result.exit_code != 0 and "unknown arm nope" in result.output
