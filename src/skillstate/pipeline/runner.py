"""Runs the ordered lanes: times each, keeps their writes, and skips a lane that fails."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from skillstate.conversation import Request
from skillstate.pipeline.lane import ArchiveWrite, Lane, LaneContext

log = logging.getLogger("skillstate.pipeline")


@dataclass(slots=True)
class LaneReport:
    name: str
    elapsed_s: float
    changed: bool
    report: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(slots=True)
class PipelineResult:
    request: Request
    writes: list[ArchiveWrite]
    reports: list[LaneReport]

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.reports)


def run_lanes(lanes: Sequence[Lane], request: Request, context: LaneContext) -> PipelineResult:
    """Each lane sees the previous lane's request. A lane that raises is skipped (its request
    and writes discarded) and reported; the request goes on as it was before that lane."""
    writes: list[ArchiveWrite] = []
    reports: list[LaneReport] = []
    for lane in lanes:
        started = time.perf_counter()
        try:
            outcome = lane(request, context)
        except Exception as exc:
            log.exception("lane %s failed and was skipped", lane.name)
            elapsed = time.perf_counter() - started
            error = f"{type(exc).__name__}: {exc}"
            reports.append(LaneReport(lane.name, elapsed, False, error=error))
            continue
        elapsed = time.perf_counter() - started
        changed = outcome.request is not request
        reports.append(LaneReport(lane.name, elapsed, changed, outcome.report))
        request = outcome.request
        writes += outcome.writes
    return PipelineResult(request, writes, reports)
