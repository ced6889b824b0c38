"""The gates before a saving is claimed: pure, over hand-made run records."""

from __future__ import annotations

from dataclasses import replace

from skillstate.bench.gates import TOLERANCE, judge, judge_arm
from skillstate.bench.record import RequestRecord, RunKey, RunRecord


def run(
    arm: str, cost: float, *, seed: int = 1, score: float = 1.0, **changes: object
) -> RunRecord:
    request = RequestRecord(0, 1, 1000, 0, 0, 10, 1000, cost, None, 1.0, None)
    record = RunRecord(
        key=RunKey("w", 10, seed, "openai", "openai-chat"),
        arm=arm,
        revision="r",
        model="m",
        completed=True,
        score=score,
        recall=score,
        sources={},
        violations=0,
        retries=0,
        rejected_patches=0,
        archive_bytes=0,
        digest=f"{arm}-{seed}",
        requests=[request],
    )
    return replace(record, **changes)  # type: ignore[arg-type]


def arms(*runs: RunRecord) -> dict[str, list[RunRecord]]:
    found: dict[str, list[RunRecord]] = {}
    for record in runs:
        found.setdefault(record.arm, []).append(record)
    return found


def test_a_saving_with_every_gate_passed_is_claimed_and_says_one_seed() -> None:
    verdict = judge_arm("hybrid", arms(run("passthrough", 1.0), run("hybrid", 0.6)))
    assert verdict.claim and verdict.saving is not None and abs(verdict.saving - 0.4) < 1e-9
    assert verdict.text.startswith("saves 40.0% of passthrough's cost")
    assert "one seed: no spread measured" in verdict.text


def test_the_baseline_and_the_reference_are_never_claimed() -> None:
    group = arms(run("passthrough", 1.0), run("direct", 1.0))
    assert judge_arm("passthrough", group).text == "baseline"
    direct = judge_arm("direct", group)
    assert not direct.claim and direct.text.startswith("reference")


def test_a_loss_is_printed_as_it_is() -> None:
    verdict = judge_arm("hybrid", arms(run("passthrough", 1.0), run("hybrid", 1.5, score=0.0)))
    assert not verdict.claim and verdict.text.startswith("loss: costs 50.0% more")


def test_the_same_cost_is_neither_a_saving_nor_a_loss() -> None:
    same = run("hybrid", 1.0, digest="passthrough-1")
    verdict = judge_arm("hybrid", arms(run("passthrough", 1.0), same))
    assert not verdict.claim and verdict.text.startswith("no change: costs what passthrough")


def test_an_arm_that_changed_nothing_claims_nothing() -> None:
    group = arms(run("passthrough", 1.0), run("paper", 0.5, digest="passthrough-1"))
    verdict = judge_arm("paper", group)
    assert not verdict.claim and "did not change the requests" in verdict.text


def test_a_worse_score_beyond_the_tolerance_voids_the_claim() -> None:
    within = arms(run("passthrough", 1.0), run("hybrid", 0.5, score=1.0 - TOLERANCE / 2))
    assert judge_arm("hybrid", within).claim
    beyond = arms(run("passthrough", 1.0), run("hybrid", 0.5, score=0.5))
    verdict = judge_arm("hybrid", beyond)
    assert not verdict.claim and verdict.text.startswith("no claim: score 0.50 below")


def test_violations_void_the_claim() -> None:
    verdict = judge_arm("hybrid", arms(run("passthrough", 1.0), run("hybrid", 0.5, violations=2)))
    assert verdict.text == "no claim: 2 tool-pair violations"


def test_an_unfinished_run_anywhere_in_the_group_voids_every_claim() -> None:
    group = arms(
        run("passthrough", 1.0),
        run("hybrid", 0.5),
        run("paper", 0.5, completed=False, error="HTTP 502"),
    )
    verdict = judge_arm("hybrid", group)
    assert not verdict.claim and "paper did not finish seed 1 (HTTP 502)" in verdict.text


def test_different_seeds_void_the_claim() -> None:
    group = arms(run("passthrough", 1.0), run("hybrid", 0.5, seed=2))
    assert "ran seeds [2], passthrough [1]" in judge_arm("hybrid", group).text


def test_without_passthrough_nothing_is_claimed() -> None:
    assert judge_arm("hybrid", arms(run("hybrid", 0.5))).text == "no claim: passthrough did not run"


def test_a_saving_within_the_seed_to_seed_spread_is_not_claimed() -> None:
    noisy = arms(
        run("passthrough", 1.0, seed=1),
        run("passthrough", 1.0, seed=2),
        run("hybrid", 0.98, seed=1),
        run("hybrid", 0.90, seed=2),
    )
    verdict = judge_arm("hybrid", noisy)
    assert not verdict.claim and "within the seed-to-seed spread" in verdict.text
    steady = arms(
        run("passthrough", 1.0, seed=1),
        run("passthrough", 1.0, seed=2),
        run("hybrid", 0.50, seed=1),
        run("hybrid", 0.52, seed=2),
    )
    claimed = judge_arm("hybrid", steady)
    assert claimed.claim and "spread" not in claimed.text


def test_judge_gives_a_verdict_per_group_and_arm() -> None:
    runs = [run("passthrough", 1.0), run("hybrid", 0.5)]
    other = [replace(r, key=replace(r.key, pricing="anthropic")) for r in runs]
    verdicts = judge([*runs, *other])
    assert len(verdicts) == 4
    assert {group.pricing for group, _ in verdicts} == {"openai", "anthropic"}
