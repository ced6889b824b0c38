"""The figures issue 28 judges, from one run of ``skillstate bench overhead``: each arm on the
short request as a ratio to the bare forwarder (the floor for a Python proxy), beside the
issue's targets, and hybrid before its first boundary against off.

"Added" is an arm's figure minus ``direct``'s in the same cell (what the arm puts between the
client and the provider); requests/s and CPU per request are the arm's own. The ratio of a
figure is the arm's over the forwarder's; a target bounds that ratio for ``off`` (and, where it
ran, ``hybrid``, which on the short request is a session before its first boundary).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from skillstate.bench.load import Row
from skillstate.bench.peers import Arm, Cell, Workload

#: Hybrid before its first boundary costs at most this share more than off (issue 28): a cost
#: (time) at most 1.1x off's, a throughput at least 0.9x; better than off is no miss.
HYBRID_WITHIN = 0.10
_JUDGED = (Arm.OFF.value, Arm.HYBRID.value)


class Bound(enum.Enum):
    AT_MOST = "<="
    AT_LEAST = ">="


@dataclass(frozen=True, slots=True)
class Spec:
    """One figure: its name, the cell it is read in, how it is read, and its target."""

    name: str
    stream: bool
    concurrency: int
    read: Callable[[Row, Row], float | None]
    """The figure from the arm's row and direct's row of the same cell."""
    bound: Bound | None = None
    ratio: float = 0.0

    @property
    def target(self) -> str:
        return "-" if self.bound is None else f"{self.bound.value} {self.ratio:g}x"

    def met(self, ratio: float) -> bool | None:
        if self.bound is None:
            return None
        if self.bound is Bound.AT_MOST:
            return ratio <= self.ratio
        return ratio >= self.ratio


def _added_p50(r: Row, d: Row) -> float:
    return r.p50_ms - d.p50_ms


def _added_p99(r: Row, d: Row) -> float:
    return r.p99_ms - d.p99_ms


def _added_ttfb(r: Row, d: Row) -> float | None:
    if r.ttfb_p50_ms is None or d.ttfb_p50_ms is None:
        return None
    return r.ttfb_p50_ms - d.ttfb_p50_ms


def _rps(r: Row, d: Row) -> float:
    return r.rps


def _cpu(r: Row, d: Row) -> float | None:
    return r.cpu_ms


SPECS = (
    Spec("added p50 ms, plain, c=1", False, 1, _added_p50, Bound.AT_MOST, 1.5),
    Spec("added ttfb p50 ms, stream, c=1", True, 1, _added_ttfb, Bound.AT_MOST, 1.5),
    Spec("added p99 ms, plain, c=1", False, 1, _added_p99, Bound.AT_MOST, 3.0),
    Spec("req/s, plain, c=64", False, 64, _rps, Bound.AT_LEAST, 0.6),
    Spec("added p99 ms, plain, c=64", False, 64, _added_p99, Bound.AT_MOST, 2.0),
    Spec("CPU ms/request, plain, c=1", False, 1, _cpu),
    Spec("CPU ms/request, stream, c=1", True, 1, _cpu),
)

#: The two figures hybrid before its boundary is held to off on.
_HYBRID_FIGURES = (SPECS[0], SPECS[3])


@dataclass(frozen=True, slots=True)
class Figure:
    """One figure for every arm that ran, and each arm's ratio to the forwarder's."""

    spec: Spec
    values: dict[str, float | None]
    ratios: dict[str, float | None]

    def verdict(self, arm: str) -> bool | None:
        """Whether ``arm``'s ratio meets the target (None: not judged or not measured)."""
        ratio = self.ratios.get(arm)
        if arm not in _JUDGED or ratio is None:
            return None
        return self.spec.met(ratio)


def figures(cells: Sequence[Cell]) -> list[Figure]:
    """The figures of ``SPECS`` from the short request's cells, for every arm but direct; none
    when the forwarder did not run (there is no floor to divide by)."""
    short = {
        (c.row.arm, c.row.stream, c.row.concurrency): c.row
        for c in cells
        if c.workload is Workload.SHORT
    }
    arms = [a.value for a in Arm if a is not Arm.DIRECT and (a.value, False, 1) in short]
    if Arm.FORWARDER.value not in arms:
        return []
    found = []
    for spec in SPECS:
        direct = short.get((Arm.DIRECT.value, spec.stream, spec.concurrency))
        values: dict[str, float | None] = {}
        for arm in arms:
            mine = short.get((arm, spec.stream, spec.concurrency))
            values[arm] = None if mine is None or direct is None else spec.read(mine, direct)
        floor = values.get(Arm.FORWARDER.value)
        ratios = {
            arm: None if value is None or not floor or floor <= 0 else value / floor
            for arm, value in values.items()
        }
        found.append(Figure(spec, values, ratios))
    return found


def as_json(found: Sequence[Figure]) -> list[dict[str, object]]:
    """The figures as JSON: name, target, each arm's value and its ratio to the forwarder."""
    return [
        {"figure": f.spec.name, "target": f.spec.target, "values": f.values, "ratios": f.ratios}
        for f in found
    ]


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"


def _ratio(figure: Figure, arm: str) -> str:
    ratio = figure.ratios.get(arm)
    if ratio is None:
        return "-"
    mark = {True: " ok", False: " MISS", None: ""}[figure.verdict(arm)]
    return f"{ratio:.2f}x{mark}"


def hybrid_against_off(found: Sequence[Figure]) -> Iterator[str]:
    """Hybrid before its boundary against off, on added p50 (c=1) and requests/s (c=64)."""
    for figure in found:
        if figure.spec not in _HYBRID_FIGURES:
            continue
        off = figure.values.get(Arm.OFF.value)
        hybrid = figure.values.get(Arm.HYBRID.value)
        if off is None or hybrid is None or off <= 0:
            continue
        share = hybrid / off
        if figure.spec.bound is Bound.AT_LEAST:
            ok, target = share >= 1 - HYBRID_WITHIN, f">= {1 - HYBRID_WITHIN:g}x"
        else:
            ok, target = share <= 1 + HYBRID_WITHIN, f"<= {1 + HYBRID_WITHIN:g}x"
        yield (
            f"  hybrid / off, {figure.spec.name}: {share:.2f}x "
            f"(target {target}): {'ok' if ok else 'MISS'}"
        )


def format_floor(cells: Sequence[Cell]) -> list[str]:
    """The table of the figures against the forwarder (no lines when it did not run)."""
    found = figures(cells)
    if not found:
        return []
    arms = list(found[0].values)
    others = [arm for arm in arms if arm != Arm.FORWARDER.value]
    head = f"  {'figure':31} {'target':>8} " + " ".join(f"{arm:>9}" for arm in arms)
    head += "".join(f" {arm + '/fwd':>14}" for arm in others)
    lines = ["against the bare forwarder (short request, same run; ratio = arm / forwarder):"]
    lines.append(head)
    for figure in found:
        line = f"  {figure.spec.name:31} {figure.spec.target:>8} "
        line += " ".join(f"{_value(figure.values[arm]):>9}" for arm in arms)
        line += "".join(f" {_ratio(figure, arm):>14}" for arm in others)
        lines.append(line)
    lines += list(hybrid_against_off(found))
    return lines
