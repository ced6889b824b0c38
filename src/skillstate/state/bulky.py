"""Bulky tool output compacted as soon as it pays: when a session passed through before its
first boundary is offered ``recall``.

Until its first boundary hybrid mode sends a session as it came (``epochs``: the boundary
must pay for its cache miss first), so a tool output the ``outputs`` lane would make a view
of (a JSON document, a log) stays whole in every later request, re-read each time at the
cached price. Offering ``recall`` lets that lane replace it by its view, the original kept
exactly in the archive, at the price of one cache miss: the tool list changes before
everything else, so the request that first offers it is read afresh. From then on every
request of the session offers it, and the views are the same bytes each time (a pure
function of the output), so the prefix cache hits again from the next request.

The rule (input-token units, prices relative to the input price as in ``epochs``): let
``D`` be the tokens the views save over the outputs (each output less its view), ``a`` the
tokens ``recall``'s definition adds to every request, ``P`` the tokens the provider would
read from its cache if the request went as it came (the system prompt, the tools and the
history up to the model's newest reply), ``H`` the horizon (``expected_remaining_turns``, at
most ``MAX_HORIZON``), ``c`` the cached and ``w`` the write price. Offering it now saves

    saving = (D - a) * (w + H * c)  -  P * (w - c)

this request writes ``D - a`` fewer tokens and each of the ``H`` after it reads as many
fewer from the cache, against ``P`` written afresh instead of read from the cache. It is
offered when the saving passes a noise margin (``NOISE_SHARE`` of the two sides together,
at least ``NOISE_FLOOR``: the token counts are the gateway's estimates), or when the
outputs' saving alone takes at least ``WINDOW_SHARE`` of the model's context window
(``CONTEXT_TOKENS``) and the saving is not below minus that margin: where the money is
about even, the window decides.

Worked example, Chat (c = 0.1, w = 1): a 120 KB JSON document (about 30,000 tokens, its
view about 1,700) arrives at turn 2 of a tool loop, ``a`` = 150, ``P`` = 3,000, ``H`` = 2:
``saving = 28,150 * 1.2 - 3,000 * 0.9 = 31,080`` against a margin of ``0.05 * (33,780 +
2,700) = 1,824``: offered at once, so no request after it carries the document whole. The
same document at turn 60, ``P`` = 120,000 and ``H`` = 32: ``28,150 * 4.2 - 108,000 =
10,230`` against ``0.05 * (118,230 + 108,000) = 11,312``: not offered (too close to call; a
session that long has mostly had its first boundary, which offers ``recall`` and views it).
Anthropic (c = 0.1, w = 1.25), the turn-2 document: ``28,150 * 1.45 - 3,000 * 1.15 =
37,367``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from skillstate.conversation import Part, Request, Role, ToolResult
from skillstate.economics import tokenizer
from skillstate.state.epochs import (
    MAX_HORIZON,
    NOISE_FLOOR,
    NOISE_SHARE,
    CachePrices,
    Verdict,
    expected_remaining_turns,
)
from skillstate.state.turns import newest_reply

CONTEXT_TOKENS = 128_000
"""The context window assumed for the window's share: the smallest of today's common
models' (the price catalog does not list windows)."""
WINDOW_SHARE = 0.25
"""Outputs whose views would save this share of the window are compacted where the money is
about even."""


def recall_verdict(
    saved_tokens: int,
    *,
    recall_tokens: int,
    cached_tokens: int,
    turns_so_far: int,
    prices: CachePrices,
) -> Verdict:
    """Whether offering ``recall`` now, so that views save ``saved_tokens`` (``D``), pays for
    the request's cache miss: ``recall_tokens`` is ``a``, ``cached_tokens`` ``P``. The rule
    and worked examples are the module docstring's."""
    c = prices.cached_input / prices.input
    w = prices.write / prices.input
    horizon = min(expected_remaining_turns(turns_so_far), MAX_HORIZON)
    gain = (saved_tokens - recall_tokens) * (w + horizon * c)
    miss = cached_tokens * max(0.0, w - c)
    saving = gain - miss
    margin = max(NOISE_FLOOR, NOISE_SHARE * (abs(gain) + miss))
    starts = saving > margin
    if not starts and saved_tokens >= WINDOW_SHARE * CONTEXT_TOKENS:
        starts = saving >= -margin
    return Verdict(starts, saving, margin, horizon)


@dataclass(frozen=True, slots=True)
class Viewer:
    """What the outputs lane would make of a tool output as it arrives, where it runs (given
    the engine by the composition root): ``saving`` is the tokens its view saves (0: it makes
    none), for an output of at least ``min_chars``."""

    saving: Callable[[Role, Part], int]
    min_chars: int


def views_save(request: Request, viewer: Viewer) -> int:
    """The tokens the views of the tool outputs ``request`` adds since the model's newest reply
    would save (0: none of them would be a view)."""
    messages = request.messages
    return sum(
        viewer.saving(message.role, part)
        for message in messages[newest_reply(messages) + 1 :]
        for part in message.parts
        if isinstance(part, ToolResult)
    )


def outputs_verdict(
    request: Request, viewer: Viewer, recall_tokens: int, turns_so_far: int, prices: CachePrices
) -> Verdict | None:
    """``recall_verdict`` for the tool outputs ``request`` adds since the model's newest reply
    (None: none of them would be a view). ``P`` is what goes before those outputs: the system
    prompt, the tools and the history up to that reply."""
    messages = request.messages
    replied = newest_reply(messages)
    saved = views_save(request, viewer)
    if saved <= 0:
        return None
    (_, head), _ = tokenizer.head(request)
    return recall_verdict(
        saved,
        recall_tokens=recall_tokens,
        cached_tokens=head + tokenizer.messages_tokens(messages[: replied + 1]),
        turns_so_far=turns_so_far,
        prices=prices,
    )
