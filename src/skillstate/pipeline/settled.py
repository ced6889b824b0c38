"""The old tool results a lane may rewrite at an epoch boundary: those of the turns the
boundary kept verbatim (``LaneContext.kept``), all but the newest few.

The boundary request misses the provider's cache from the Σ message on, so rewriting there
costs no extra miss; the same messages sit at the same places on every later request of the
epoch, so a lane that rewrites them by a pure function of their content sends the same bytes
on each. The newest ``fresh`` turns stay whole: they are what the model is working on.
"""

from __future__ import annotations

from collections.abc import Iterator

from skillstate.conversation import Request, ToolResult
from skillstate.state.turns import segment


def settled_results(request: Request, kept: range, fresh: int) -> Iterator[tuple[int, int]]:
    """``(message, part)`` indexes of every tool result in the turns of ``kept`` but its
    newest ``fresh``, in order; none when ``kept`` is empty or does not fit the request."""
    messages = request.messages
    if not kept or kept.stop > len(messages):
        return
    turns = segment(messages[kept.start : kept.stop], count=_uncounted)
    settled = turns[: max(0, len(turns) - fresh)]
    if not settled:
        return
    for index in range(kept.start, kept.start + settled[-1].end):
        for position, part in enumerate(messages[index].parts):
            if isinstance(part, ToolResult):
                yield index, position


def _uncounted(_message: object) -> int:
    return 0
