"""The text of a peer-overhead run: every cell, what each arm adds over going direct, the
ratios of skillstate to LiteLLM, and the issue's targets as met or missed by how much.

Targets (issue 9, item 7), on the same run: skillstate's added p50 at most a quarter of
LiteLLM's (``P50_TARGET``), and its throughput at concurrency 64 at least three times
LiteLLM's (``RPS_TARGET``). They are judged for the pass-through (``off``) on the short
request and for ``hybrid`` on the long session, each against LiteLLM on the same body.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from skillstate import __version__
from skillstate.bench.floor import format_floor
from skillstate.bench.load import Row
from skillstate.bench.peers import Arm, Cell, Report, Workload

P50_TARGET = 0.25
RPS_TARGET = 3.0
_OURS = ((Workload.SHORT, Arm.OFF), (Workload.LONG, Arm.HYBRID), (Workload.LONG, Arm.OFF))


@dataclass(frozen=True, slots=True)
class Added:
    """What one arm adds over ``direct`` in one cell of the same run."""

    workload: Workload
    arm: str
    stream: bool
    concurrency: int
    p50_ms: float
    p99_ms: float
    ttfb_p50_ms: float | None
    throughput: float
    """Requests/s as a share of direct's."""


def added(cells: list[Cell]) -> list[Added]:
    """Each non-direct cell against the direct cell of the same workload, mode, concurrency."""
    direct = {
        (c.workload, c.row.stream, c.row.concurrency): c.row
        for c in cells
        if c.row.arm == Arm.DIRECT
    }
    out = []
    for c in cells:
        base = direct.get((c.workload, c.row.stream, c.row.concurrency))
        if c.row.arm == Arm.DIRECT or base is None:
            continue
        r = c.row
        ttfb = None
        if r.ttfb_p50_ms is not None and base.ttfb_p50_ms is not None:
            ttfb = r.ttfb_p50_ms - base.ttfb_p50_ms
        out.append(
            Added(
                c.workload,
                r.arm,
                r.stream,
                r.concurrency,
                r.p50_ms - base.p50_ms,
                r.p99_ms - base.p99_ms,
                ttfb,
                r.rps / base.rps if base.rps else 0.0,
            )
        )
    return out


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _mode(stream: bool) -> str:
    return "stream" if stream else "plain"


def _cell_line(workload: Workload, r: Row) -> str:
    return (
        f"{workload.value:5} {r.arm:9} {_mode(r.stream):6} {r.concurrency:4d} {r.requests:6d} "
        f"{r.rps:8.0f} {r.p50_ms:8.3f} {r.p99_ms:8.3f} "
        f"{_ms(r.ttfb_p50_ms):>8} {_ms(r.ttfb_p99_ms):>8} {_ms(r.cpu_ms):>8}"
    )


def _added_line(a: Added) -> str:
    line = (
        f"  {a.workload.value:5} {a.arm:9} {_mode(a.stream):6} c={a.concurrency:<3} "
        f"p50 {a.p50_ms:+.3f} ms, p99 {a.p99_ms:+.3f} ms, "
        f"throughput {a.throughput:.2f}x of direct"
    )
    if a.ttfb_p50_ms is not None:
        line += f", ttfb p50 {a.ttfb_p50_ms:+.3f} ms"
    return line


@dataclass(frozen=True, slots=True)
class Verdict:
    """One target in one cell: the measured ratio (None when it cannot be formed) and whether
    it meets the target."""

    what: str
    ratio: float | None
    target: str
    met: bool

    def line(self) -> str:
        if self.ratio is None:
            return f"  {self.what}: cannot be judged (LiteLLM added nothing measurable)"
        shown = f"{self.ratio:.2f}x (target {self.target})"
        if self.met:
            return f"  {self.what}: {shown}: met"
        return f"  {self.what}: {shown}: missed by {self._by()}"

    def _by(self) -> str:
        assert self.ratio is not None
        if self.target.startswith("<="):
            return f"{self.ratio / P50_TARGET:.1f}x the allowed share"
        return f"{RPS_TARGET / self.ratio:.1f}x too little throughput"


def verdicts(found: list[Added], cells: list[Cell]) -> Iterator[Verdict]:
    """The targets for each of our arms that ran on a workload where LiteLLM ran too."""
    by = {(a.workload, a.arm, a.stream, a.concurrency): a for a in found}
    rps = {(c.workload, c.row.arm, c.row.stream, c.row.concurrency): c.row.rps for c in cells}
    for workload, arm in _OURS:
        for stream in (False, True):
            for concurrency in (1, 64):
                ours = by.get((workload, arm.value, stream, concurrency))
                peer = by.get((workload, Arm.LITELLM.value, stream, concurrency))
                if ours is None or peer is None:
                    continue
                name = f"{workload.value} {arm.value} {_mode(stream)} c={concurrency}"
                ratio = ours.p50_ms / peer.p50_ms if peer.p50_ms > 0 else None
                met = ratio is not None and ratio <= P50_TARGET
                yield Verdict(f"{name} added p50 / LiteLLM's", ratio, f"<= {P50_TARGET}", met)
                if concurrency == 64:
                    mine = rps[(workload, arm.value, stream, concurrency)]
                    theirs = rps[(workload, Arm.LITELLM.value, stream, concurrency)]
                    share = mine / theirs if theirs else None
                    ok = share is not None and share >= RPS_TARGET
                    yield Verdict(f"{name} req/s / LiteLLM's", share, f">= {RPS_TARGET:g}", ok)


def format_report(report: Report) -> str:
    """The whole report, as printed."""
    lines = [
        f"skillstate {__version__} overhead against direct and a peer, {report.cores} cores; "
        f"long session: {report.turns} tool steps, {report.long_kb:.0f} KB",
        f"{'load':5} {'arm':9} {'mode':6} {'conc':>4} {'req':>6} {'req/s':>8} "
        f"{'p50 ms':>8} {'p99 ms':>8} {'ttfb50':>8} {'ttfb99':>8} {'cpu/req':>8}",
    ]
    lines += [_cell_line(c.workload, c.row) for c in report.cells]
    found = added(report.cells)
    if found:
        lines += ["", "added over direct (same run, same body):"]
        lines += [_added_line(a) for a in found]
    floor = format_floor(report.cells)
    if floor:
        lines += ["", *floor]
    judged = list(verdicts(found, report.cells))
    if judged:
        lines += ["", f"against LiteLLM {report.peer_version} (skillstate / LiteLLM, same run):"]
        lines += [v.line() for v in judged]
        met = sum(v.met for v in judged)
        lines.append(f"  {met} of {len(judged)} met")
    if report.rss_mb:
        shown = ", ".join(
            f"{arm} {'-' if mb is None else f'{mb:.0f} MB'}" for arm, mb in report.rss_mb.items()
        )
        lines += ["", f"RSS after the run (process and its children): {shown}"]
    if report.notes:
        lines += ["", *(f"note: {note}" for note in report.notes)]
    return "\n".join(lines)
