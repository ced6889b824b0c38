"""The collapse planner: where a new epoch may cut the conversation, under DESIGN.md's
invariants.

A plan splits the client's messages into three consecutive ranges:

* ``head``, kept verbatim before the Σ message: the session's first user instruction and
  whatever precedes it (invariant 3), or nothing when that protection is off;
* ``collapsed``, replaced by the Σ snapshot and archived exactly (invariant 4);
* ``tail``, kept verbatim: at least the last ``keep_recent_turns`` turns.

Both edges of the collapsed span are **cut points**: boundaries between two turns such that
no turn before it is open (no call waits for its result: invariants 1 and 2), no tool call id
has its call on one side and a result on the other (so parallel batches stay whole), and the
turn after it is not a turn of orphan results. The planner only ever moves a cut towards
keeping more verbatim, never less: the tail cut moves earlier and the head cut later until
both are cut points, and when they meet there is nothing to collapse.

The planner is pure and stateless: it plans over the client's whole history each time, so a
new epoch's collapsed span contains the previous epoch's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from skillstate.state.options import CollapseOptions
from skillstate.state.turns import Turn

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CollapsePlan:
    """Message index ranges of one collapse; ``turns`` are the collapsed turns."""

    head: range
    collapsed: range
    tail: range
    turns: tuple[Turn, ...]

    @property
    def kept(self) -> tuple[range, range]:
        """The ranges kept verbatim: the head and the tail."""
        return self.head, self.tail

    @property
    def collapsed_tokens(self) -> int:
        """Tokens of the collapsed turns, which the Σ snapshot stands in for."""
        return sum(turn.tokens for turn in self.turns)

    def split(self, messages: Sequence[T]) -> tuple[list[T], list[T], list[T]]:
        """``messages`` (the ones the plan was made over) as head, collapsed and tail."""
        if len(messages) != self.tail.stop:
            raise ValueError(f"plan covers {self.tail.stop} messages, got {len(messages)}")
        return (
            list(messages[self.head.start : self.head.stop]),
            list(messages[self.collapsed.start : self.collapsed.stop]),
            list(messages[self.tail.start : self.tail.stop]),
        )


def plan_collapse(
    turns: Sequence[Turn],
    options: CollapseOptions,
    *,
    force: bool = False,
    subagent: bool = False,
) -> CollapsePlan | None:
    """Plan collapsing everything older than the last ``options.keep_recent_turns`` turns.

    ``turns`` are ``segment``'s turns of the whole conversation. Returns ``None`` when there
    is nothing to do: collapse disabled, a subagent session without
    ``allow_subagent_sessions``, fewer than ``min_turns`` turns (unless ``force``: a forced
    boundary still keeps every invariant and the recent turns), or no collapsible span.
    """
    if not options.enabled or (subagent and not options.allow_subagent_sessions):
        return None
    if not turns or (len(turns) < options.min_turns and not force):
        return None
    cuttable = cut_points(turns)
    first = _head_turns(turns, options)
    while first < len(turns) and not cuttable[first]:
        first += 1
    # The newest turn always stays: a request must end with what the model answers next.
    cut = len(turns) - max(1, options.keep_recent_turns)
    while cut > first and not cuttable[cut]:
        cut -= 1
    if cut <= first:
        return None
    start = turns[first].start
    stop = turns[cut].start
    return CollapsePlan(
        head=range(start),
        collapsed=range(start, stop),
        tail=range(stop, turns[-1].end),
        turns=tuple(turns[first:cut]),
    )


def cut_points(turns: Sequence[Turn]) -> list[bool]:
    """For each boundary ``b`` (before ``turns[b]``; ``len(turns)`` is the end), whether a
    cut may land there. See the module docstring for the rule."""
    n = len(turns)
    first_at: dict[str, int] = {}
    last_at: dict[str, int] = {}
    for turn in turns:
        for call_id in (*turn.calls, *turn.results):
            first_at.setdefault(call_id, turn.index)
            last_at[call_id] = turn.index
    # Boundaries b with first < b <= last separate a call id's appearances: count them with a
    # difference array, so the whole table costs one pass.
    crossing = [0] * (n + 2)
    for call_id, first in first_at.items():
        last = last_at[call_id]
        if first < last:
            crossing[first + 1] += 1
            crossing[last + 1] -= 1
    points: list[bool] = []
    separated = 0
    open_before = False
    for b in range(n + 1):
        separated += crossing[b]
        orphan_next = b < n and turns[b].kind == "results"
        points.append(separated == 0 and not open_before and not orphan_next)
        if b < n:
            open_before = open_before or turns[b].open
    return points


def _head_turns(turns: Sequence[Turn], options: CollapseOptions) -> int:
    """How many turns at the start stay verbatim: through the first user instruction when
    it is protected (none when the conversation has no user turn yet).

    The instruction is everything the user said before the model first answered: hosts split
    it over several user messages (Codex sends its environment context, then the task), and
    the task must not be collapsed for coming second."""
    if not options.protect_first_user_message:
        return 0
    for turn in turns:
        if turn.first_user:
            end = turn.index + 1
            while end < len(turns) and turns[end].kind == "user":
                end += 1
            return end
    return 0
