"""Runs the ordered lanes: times each, keeps their writes, and skips a lane that fails."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillstate.conversation import Request, Response
from skillstate.pipeline.lane import ArchiveWrite, Followup, Lane, LaneContext

log = logging.getLogger("skillstate.pipeline")


@dataclass(slots=True)
class LaneReport:
    name: str
    elapsed_s: float
    changed: bool
    report: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    summary: str = ""


@dataclass(slots=True)
class PipelineResult:
    request: Request
    writes: list[ArchiveWrite]
    reports: list[LaneReport]
    context: LaneContext
    """The context as the last lane saw it (``kept`` as the state lane set it)."""
    answer: Response | None = None
    followup: Followup | None = None

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.reports)

    def header(self) -> str:
        """``x-skillstate-lanes``: what each lane that did something did; a failed lane says
        so (``state=failed:RuntimeError``)."""
        said = []
        for report in self.reports:
            if report.error is not None:
                said.append(f"{report.name}=failed:{report.error.partition(':')[0]}")
            elif report.summary:
                said.append(f"{report.name}={report.summary}")
        return "; ".join(said)


Keep = Callable[[ArchiveWrite], Awaitable[None]]
"""Archives one write exactly (raising when it cannot)."""


async def run_lanes(
    lanes: Sequence[Lane], request: Request, context: LaneContext, keep: Keep | None = None
) -> PipelineResult:
    """Each lane sees the previous lane's request. A lane's archive writes are kept (``keep``)
    before anything goes on: a lane whose writes cannot all be kept, for want of ``keep`` or
    because it raised, is skipped like a lane that raises (its request and writes discarded,
    the request going on as it was before that lane), and reported; nothing it took out of
    the request is lost. A lane that answers the request ends the list: nothing goes
    upstream. A lane's ``kept`` is the context's for the lanes after it."""
    result = PipelineResult(request, [], [], context)
    for lane in lanes:
        started = time.perf_counter()
        try:
            outcome = await lane(result.request, result.context)
            await _keep_all(outcome.writes, keep)
        except Exception as exc:
            log.exception("lane %s failed and was skipped", lane.name)
            elapsed = time.perf_counter() - started
            error = f"{type(exc).__name__}: {exc}"
            result.reports.append(LaneReport(lane.name, elapsed, False, error=error))
            continue
        elapsed = time.perf_counter() - started
        changed = outcome.request is not result.request
        report = LaneReport(lane.name, elapsed, changed, outcome.report, summary=outcome.summary)
        result.reports.append(report)
        result.request = outcome.request
        result.writes += outcome.writes
        if outcome.followup is not None:
            result.followup = outcome.followup
        if outcome.kept is not None:
            result.context = dataclasses.replace(result.context, kept=outcome.kept)
        if outcome.answer is not None:
            result.answer = outcome.answer
            break
    return result


async def _keep_all(writes: list[ArchiveWrite], keep: Keep | None) -> None:
    if writes and keep is None:
        raise RuntimeError("the lane took content out but no archive keeps it")
    for write in writes:
        assert keep is not None
        await keep(write)
