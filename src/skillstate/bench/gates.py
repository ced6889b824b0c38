"""The gates before a saving is printed (../shared/BENCH.md, "Gates"), as pure functions over
finished runs.

Within one group (a workload at one horizon, pricing and wire), arm X's saving is
``1 - cost(X) / cost(passthrough)``, paired seed by seed and averaged. It is claimed only when
every gate holds, checked in this order (the first that fails is the reason given):

1. **complete**: every arm of the group ran the same seeds as ``passthrough``, and every run
   finished (a failed run anywhere in the group voids every claim in it);
2. **engaged**: the arm changed what the provider got (its requests differ from
   passthrough's for at least one seed): an arm that sent the same bytes saved nothing;
3. **no violations**: no request the provider got split a tool call from its result;
4. **no worse**: its mean score and mean recall are each at least passthrough's minus
   ``TOLERANCE``;
5. **beyond the spread**: with two seeds or more, the mean saving is larger than the spread
   of the per-seed savings (max - min). With one seed no spread is measured; the claim is
   still made when the other gates hold, and says "one seed: no spread measured".

A loss (a mean saving of zero or less) is printed as it is, whatever the gates say.
``passthrough`` is the baseline; ``direct`` is a reference (no gateway at all), printed as
its cost against passthrough, never claimed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean

from skillstate.bench.arms import BASELINE
from skillstate.bench.record import RunRecord

TOLERANCE = 0.02
"""How far below passthrough a claiming arm's mean score and recall may be."""

REFERENCE = "direct"


@dataclass(frozen=True, slots=True)
class Group:
    """Runs that are compared with each other: one workload, horizon, pricing, wire and
    breakpoint layout."""

    workload: str
    horizon: int
    pricing: str
    wire: str
    markers: str | None = None


def group_of(run: RunRecord) -> Group:
    key = run.key
    return Group(key.workload, key.horizon, key.pricing, key.wire, key.markers)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What may be printed for one arm of a group: ``text``, and the mean ``saving`` (a
    fraction of passthrough's cost; None where it could not be computed) and whether it is a
    ``claim``."""

    text: str
    saving: float | None = None
    claim: bool = False


def judge(
    runs: Iterable[RunRecord], tolerance: float = TOLERANCE
) -> dict[tuple[Group, str], Verdict]:
    """A verdict for every (group, arm) of ``runs``."""
    groups: dict[Group, dict[str, list[RunRecord]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        groups[group_of(run)][run.arm].append(run)
    verdicts: dict[tuple[Group, str], Verdict] = {}
    for group, arms in groups.items():
        for arm in arms:
            verdicts[group, arm] = judge_arm(arm, arms, tolerance)
    return verdicts


SAME_COST = 1e-9
"""A saving smaller than this share is no saving and no loss: the arm cost what the baseline
did (hybrid before its first boundary sends pass-through's requests)."""


def judge_arm(
    arm: str, arms: Mapping[str, Sequence[RunRecord]], tolerance: float = TOLERANCE
) -> Verdict:
    """The verdict of ``arm`` among the runs of one group, by arm."""
    if arm == BASELINE:
        return Verdict("baseline")
    base = {run.key.seed: run for run in arms.get(BASELINE, ())}
    if not base:
        return Verdict(f"no claim: {BASELINE} did not run")
    incomplete = _incomplete(arms, set(base))
    mine = {run.key.seed: run for run in arms[arm]}
    savings = [_saving(mine[s], base[s]) for s in sorted(mine) if s in base]
    saving = fmean(savings) if savings else None
    if incomplete:
        return Verdict(f"no claim: {incomplete}", saving)
    assert saving is not None
    tokens = _token_change(mine, base)
    if arm == REFERENCE:
        ratio = 1.0 - saving
        return Verdict(f"reference (no gateway): {ratio:.3f}x {BASELINE}'s cost", saving)
    if abs(saving) < SAME_COST:
        return Verdict(f"no change: costs what {BASELINE} costs{tokens}", saving)
    if saving < 0:
        return Verdict(f"loss: costs {_percent(-saving)} more than {BASELINE}{tokens}", saving)
    reason = _failed_gate(mine, base, savings, tolerance)
    if reason is not None:
        return Verdict(f"no claim: {reason}", saving)
    one = "; one seed: no spread measured" if len(savings) == 1 else ""
    return Verdict(f"saves {_percent(saving)} of {BASELINE}'s cost{tokens}{one}", saving, True)


def _incomplete(arms: Mapping[str, Sequence[RunRecord]], seeds: set[int]) -> str | None:
    for name, runs in arms.items():
        ran = {run.key.seed for run in runs}
        if ran != seeds:
            return f"{name} ran seeds {sorted(ran)}, {BASELINE} {sorted(seeds)}"
        for run in runs:
            if not run.completed:
                return f"{name} did not finish seed {run.key.seed} ({run.error or 'no answer'})"
    return None


def _failed_gate(
    mine: Mapping[int, RunRecord],
    base: Mapping[int, RunRecord],
    savings: Sequence[float],
    tolerance: float,
) -> str | None:
    if all(mine[s].digest == base[s].digest for s in mine):
        return f"the arm did not change the requests (same as {BASELINE})"
    violations = sum(run.violations for run in mine.values())
    if violations:
        return f"{violations} tool-pair violations"
    for measure in ("score", "recall"):
        ours = fmean(getattr(run, measure) for run in mine.values())
        theirs = fmean(getattr(run, measure) for run in base.values())
        if ours < theirs - tolerance:
            return (
                f"{measure} {ours:.2f} below {BASELINE}'s {theirs:.2f} (tolerance {tolerance:.2f})"
            )
    if len(savings) > 1:
        spread = max(savings) - min(savings)
        if fmean(savings) <= spread:
            return (
                f"saving {_percent(fmean(savings))} within the seed-to-seed spread "
                f"{_percent(spread)}"
            )
    return None


def _saving(run: RunRecord, base: RunRecord) -> float:
    return 1.0 - run.cost / base.cost if base.cost > 0 else 0.0


def _token_change(mine: Mapping[int, RunRecord], base: Mapping[int, RunRecord]) -> str:
    ours = sum(run.input_tokens for run in mine.values())
    theirs = sum(run.input_tokens for run in base.values())
    if theirs <= 0:
        return ""
    return f" (input tokens {ours / theirs:.2f}x)"


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"
