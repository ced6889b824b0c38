"""The lane pipeline: ordered pure functions over the canonical request."""

from skillstate.pipeline.lane import ArchiveWrite, Lane, LaneContext, LaneOutcome
from skillstate.pipeline.runner import LaneReport, PipelineResult, run_lanes

__all__ = [
    "ArchiveWrite",
    "Lane",
    "LaneContext",
    "LaneOutcome",
    "LaneReport",
    "PipelineResult",
    "run_lanes",
]
