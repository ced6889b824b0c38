"""The lane pipeline: ordered functions over the canonical request."""

from skillstate.pipeline.lane import (
    ArchiveWrite,
    Followup,
    Lane,
    LaneContext,
    LaneOutcome,
)
from skillstate.pipeline.lane_runner import LaneReport, PipelineResult, run_lanes

__all__ = [
    "ArchiveWrite",
    "Followup",
    "Lane",
    "LaneContext",
    "LaneOutcome",
    "LaneReport",
    "PipelineResult",
    "run_lanes",
]
