"""The lanes, in the order a request runs them: the one list everything else derives from.

Each lane declares itself in its own module (``LANE``, a ``surface.LaneSpec``: its name, its
default switch, its options dataclass, its per-request header with the values it accepts, how
it is built); this list only orders them. Adding a lane is its module and one entry here.

Why the list lives here, in ``pipeline``, and not in the composition root (``gateway``):
the config reads it (the ``[lanes.NAME]`` tables, ``--lanes``, ``SKILLSTATE_LANES``,
``skillstate config``), and ``config`` sits below ``gateway`` in the layers
(tests/contract/test_layers.py), so a list in ``gateway`` could not be read by it without an
import upward. ``pipeline`` is the lowest package that knows every lane, and the one whose
concern the order is. The composition root still does the building: ``gateway.build_lanes``
calls each entry's ``build`` with what it alone has (the state engine, the catalog, the
clock), and hands the server the headers the built lanes read.

The order, and why: host compaction first (it may answer the request, and it turns the
gateway's own compaction items back into summaries for everything after it), then tool-schema
compaction (before the state lane, which renders the tools it is given), the output style
(before the state lane too: paper mode's procedure is the system prompt it is given), effort
routing, the state lane, then text as page images and output compaction (after it: they act
only where the state lane offers ``recall``; pages first, since they keep all of a text and a
view does not: output compaction takes what the pages left).

Importing this module imports every lane and what it runs on (the state engine, the
protocols, the archive, the views: about a tenth of a second). ``pipeline.switches`` reads it
only when the config names lanes, so that ``skillstate hook`` and ``skillstate shell``, which
read the config on every shell call of an agent, do not pay for it.
"""

from __future__ import annotations

from skillstate.pipeline import (
    compaction_lane,
    effort_lane,
    outputs_lane,
    schemas_lane,
    state_lane,
    style_lane,
    vision_lane,
)
from skillstate.pipeline.surface import LaneSpec

LANES: list[LaneSpec] = [
    compaction_lane.LANE,
    schemas_lane.LANE,
    style_lane.LANE,
    effort_lane.LANE,
    state_lane.LANE,
    vision_lane.LANE,
    outputs_lane.LANE,
]
"""Every lane, in the order a request runs them. Only a test adds to it at run time (a
throwaway lane, for that test's duration); the gateway reads it when it is built."""
