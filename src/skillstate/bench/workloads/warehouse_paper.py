"""The warehouse as the SKILL.state paper lays it out, for its Table 1 side by side
(``skillstate bench table1``; docs/BENCHMARKS.md).

The same warehouse, events, questions and scoring as ``warehouse`` (its module docstring),
with the paper's layout (its appendix B, as ../shared/BENCH.md describes it): each step's
event comes in the step's own message (``Step s/h: [step s] Store ...``), so a step is one
model call and no tool is offered; lots are shipped and moved whole and at most
``warehouse.MAX_LOTS`` are held, so the inventory (the state a model must keep) stays about
the same size at every horizon, as the paper's flat prompt (1,736-1,905 characters per call
at T = 10 to 200) says its own does. ``noise`` telemetry lines follow each step's event under
the paper's ``--- BACKGROUND TELEMETRY ---`` header (the paper's environment offers 5, 20 or
50; ``bench table1`` runs ``TABLE_NOISE`` by default, docs/BENCHMARKS.md says why).
"""

from __future__ import annotations

from skillstate.bench.workloads.warehouse import Warehouse
from skillstate.bench.workloads.warehouse import build as build_warehouse

DEFAULT_HORIZON = 100
"""The horizon of the paper's headline ratio (16.2x against its Stateful baseline)."""
TABLE_NOISE = 5
"""The noise lines per step ``bench table1`` runs with unless told: the paper's lightest level,
the one its Table 1's figures match (docs/BENCHMARKS.md)."""


def build(horizon: int, seed: int, noise: int = 0) -> Warehouse:
    """The paper's layout of ``warehouse.build(horizon, seed, noise=noise)``."""
    return build_warehouse(horizon, seed, noise=noise, paper_layout=True)
