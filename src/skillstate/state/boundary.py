"""Deciding an epoch boundary for one request, purely: the window, the cost rule, the plan.

``decide`` looks at the client's history, the stored epoch and Σ, and says whether the epoch
stands, must be recomputed (the history no longer extends it), or moves to a new boundary,
and, for a new boundary, which messages are newly collapsed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from skillstate.conversation import Json, Message
from skillstate.economics.tokenizer import count_tokens
from skillstate.state.collapse import CollapsePlan, plan_collapse
from skillstate.state.epoch_record import Epoch
from skillstate.state.epochs import (
    DEFAULT_PRICES,
    BoundaryShape,
    CachePrices,
    Handover,
    boundary_verdict,
)
from skillstate.state.options import CollapseOptions
from skillstate.state.turns import Turn, segment
from skillstate.support import jsonio

HANDOVER_INSTRUCTION_TOKENS = 400
"""About what the handover instruction adds, Σ's keys included (``state.handover``)."""
HANDOVER_REPLY_TOKENS = 300
"""What the model's handover patch is expected to cost in output tokens."""


@dataclass(frozen=True, slots=True)
class Opening:
    """What a session's first boundary adds: ``tool_tokens`` of internal tool definitions,
    and a cache miss over the ``system_tokens`` of the system prompt (and the head) since the
    tool list changes before them."""

    tool_tokens: int
    system_tokens: int
    handover: bool = False
    """Whether the boundary starts with a handover round (``state.handover``)."""
    head_tokens: int = 0
    """The client's system prompt and tool definitions together: what the handover re-reads
    before the history."""


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
    opening: Opening | None = None,
) -> Decision:
    """``opening``: the session has been passed through so far, so this boundary would be its
    first (it adds the internal tools and re-sends what precedes the Σ message)."""
    turns = tuple(segment(messages))
    recomputed = stored is not None and not stored.holds(messages)
    epoch = None if recomputed else stored
    start = epoch.cut if epoch is not None else 0
    in_window = [t for t in turns if t.start >= start]
    window = sum(t.tokens for t in in_window)
    kept = sum(t.tokens for t in turns[-options.keep_recent_turns :])
    sigma = count_tokens(jsonio.dumps_str(state)) if state else 0
    previous = count_tokens(jsonio.dumps_str(epoch.snapshot)) if epoch and epoch.snapshot else 0
    shape = BoundaryShape(kept, sigma, max(0, sigma - previous))
    collapsible = window
    if opening is not None:
        head = turns[0].tokens if turns and options.protect_first_user_message else 0
        collapsible = max(0, window - head)
        handover = None
        if opening.handover:
            reread = max(opening.head_tokens, opening.system_tokens) + window
            handover = Handover(reread, HANDOVER_INSTRUCTION_TOKENS, HANDOVER_REPLY_TOKENS)
        shape = replace(
            shape,
            added_tokens=opening.tool_tokens,
            prefix_miss=opening.system_tokens + head,
            handover=handover,
        )
    verdict = boundary_verdict(
        collapsible, prices, shape, turns_so_far=len(turns), window_turns=len(in_window)
    )
    hit = force or options.every_request or window > options.max_window_tokens or verdict.starts
    decision = Decision(turns, epoch, window, hit, recomputed)
    if not hit:
        return decision
    plan = plan_collapse(turns, options, force=force, subagent=subagent)
    if plan is None or plan.collapsed.stop <= start:
        return decision
    first = max(start, plan.collapsed.start)
    return Decision(turns, epoch, window, hit, recomputed, plan, range(first, plan.collapsed.stop))
