"""The warehouse as the SKILL.state paper lays it out, for its Table 1 side by side
(``skillstate bench table1``; docs/BENCHMARKS.md).

The same warehouse, events, questions and scoring as ``warehouse`` (its module docstring),
with the paper's layout (its appendix B, as ../shared/BENCH.md describes it): each step's
event comes in the step's own message (``Step s/h: [step s] Store ...``), so a step is one
model call and no tool is offered; lots are shipped and moved whole and at most
``warehouse.MAX_LOTS`` are held, so the inventory (the state a model must keep) stays about
the same size at every horizon, as the paper's flat prompt (1,736-1,905 characters per call
at T = 10 to 200) says its own does. No telemetry noise.
"""

from __future__ import annotations

from skillstate.bench.workloads.warehouse import Warehouse
from skillstate.bench.workloads.warehouse import build as build_warehouse

DEFAULT_HORIZON = 100
"""The horizon of the paper's headline ratio (16.2x against its Stateful baseline)."""


def build(horizon: int, seed: int) -> Warehouse:
    """The paper's layout of ``warehouse.build(horizon, seed)``."""
    return build_warehouse(horizon, seed, paper_layout=True)
