"""Deciding an epoch boundary for one request, purely: the window, the cost rule, the plan.

``decide`` looks at the client's history, the stored epoch and Σ, and says whether the epoch
stands, must be recomputed (the history no longer extends it), or moves to a new boundary,
and, for a new boundary, which messages are newly collapsed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from skillstate import jsonio
from skillstate.conversation import Json, Message
from skillstate.economics.tokenizer import count_tokens
from skillstate.state.collapse import CollapsePlan, plan_collapse
from skillstate.state.epoch_record import Epoch
from skillstate.state.epochs import (
    DEFAULT_PRICES,
    BoundaryShape,
    CachePrices,
    expected_remaining_turns,
    should_start_epoch,
)
from skillstate.state.options import CollapseOptions
from skillstate.state.turns import Turn, segment


@dataclass(frozen=True, slots=True)
class Decision:
    """``epoch`` is the one to render with (None: no epoch yet); ``plan`` is set when this
    request starts a new boundary, and ``new_span`` names the messages it newly collapses."""

    turns: tuple[Turn, ...]
    epoch: Epoch | None
    window_tokens: int
    threshold_hit: bool
    recomputed: bool = False
    plan: CollapsePlan | None = None
    new_span: range | None = None


def decide(
    messages: Sequence[Message],
    stored: Epoch | None,
    state: Json,
    options: CollapseOptions,
    *,
    force: bool = False,
    prices: CachePrices = DEFAULT_PRICES,
    subagent: bool = False,
) -> Decision:
    turns = tuple(segment(messages))
    recomputed = stored is not None and not stored.holds(messages)
    epoch = None if recomputed else stored
    start = epoch.cut if epoch is not None else 0
    window = sum(t.tokens for t in turns if t.start >= start)
    kept = sum(t.tokens for t in turns[-options.keep_recent_turns :])
    sigma = count_tokens(jsonio.dumps_str(state)) if state else 0
    previous = count_tokens(jsonio.dumps_str(epoch.snapshot)) if epoch and epoch.snapshot else 0
    shape = BoundaryShape(kept, sigma, max(0, sigma - previous))
    remaining = expected_remaining_turns(len(turns))
    hit = (
        options.every_request
        or window > options.max_window_tokens
        or should_start_epoch(window, prices, remaining, shape, force=force)
    )
    decision = Decision(turns, epoch, window, hit, recomputed)
    if not hit:
        return decision
    plan = plan_collapse(turns, options, force=force, subagent=subagent)
    if plan is None or plan.collapsed.stop <= start:
        return decision
    first = max(start, plan.collapsed.start)
    return Decision(turns, epoch, window, hit, recomputed, plan, range(first, plan.collapsed.stop))
