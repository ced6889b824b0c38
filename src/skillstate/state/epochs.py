"""The epoch rule: when rewriting old turns pays for the cache miss it causes.

Between two boundaries the outbound request is a frozen prefix (system, tools, the head, the Σ
snapshot) and then the turns since the boundary, verbatim and append-only (DESIGN.md,
"Cache-stable rewriting: epochs"). Consecutive requests of an epoch share their prefix, so the
provider bills it at the cached-input price. A boundary collapses the old part of the verbatim
window into a new Σ snapshot: every later request is smaller, but the boundary request itself
misses the cache from the Σ message on. This module decides when that trade is worth making;
it is pure arithmetic over token counts and prices.

The rule (changing it changes when every session collapses)
------------------------------------------------------------

Let ``W`` be the verbatim window's tokens (everything after the Σ message), ``K`` the tokens of
the turns a boundary keeps verbatim, ``s`` the tokens of the new Σ snapshot and ``g`` how much
larger it is than the current one. Prices per token: ``c`` for cached input, ``w`` for input
written to the cache (the input price where the provider caches automatically, 1.25 times it
on Anthropic).

* From the boundary request on, each request sends ``S = W - K - g`` fewer tokens. They would
  have been cache reads, so each request saves ``S * c``.
* The boundary request re-sends the new Σ and the kept turns once at the write price instead
  of the cached one: a one-off ``(s + K) * (w - c)``.
* The boundary must pay for itself within ``H`` requests, where ``H`` is the expected number
  of remaining turns, but never more than ``payback_turns`` (4 by default): a boundary that
  needs longer to earn back its miss would let misses pile up faster than they are repaid
  (thrashing), and an expectation of a session's length is weak past a few turns.

So a boundary starts when ``H * S * c >= (s + K) * (w - c)``, that is when

    W >= K + g + (s + K) * (w - c) / (H * c)

With no cache discount (``c >= w``) any positive saving pays at once; with free cache reads
(``c = 0``) collapsing never pays and the threshold is infinite.

Worked example, an agent's tool loop on an Anthropic model: each step adds about 1,050 tokens
(a short call and a 1,000-token result), four kept turns are ``K = 4,200``, the new Σ is
``s = 1,500`` tokens, ``g = 100``; ``c = 0.1`` and ``w = 1.25`` (relative to the input price);
``H = 4``. The threshold is ``4,200 + 100 + 5,700 * 1.15 / 0.4 = 20,687.5`` tokens: every 16 or
so steps the window is collapsed back to its four newest turns, and each boundary earns back its
miss within 4 requests. tests/state/test_epochs.py simulates 100 such steps (a 3,200-token head,
Σ growing to 2,500 tokens): the request at step 100 is about 21k tokens against a transcript of
about 108k, and no request from step 70 on is a third of its transcript.

Whether the epoch still holds
-----------------------------

An epoch's prefix stands for the client's history it was built from. When the client's next
history no longer starts with that history (the user rewound, edited or the host compacted
it), the prefix is stale and the epoch is recomputed from what the client sent
(``prefix_extends``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, is_dataclass

from skillstate.conversation import Message

#: Most requests a boundary may take to earn back its cache miss.
DEFAULT_PAYBACK_TURNS = 4.0


@dataclass(frozen=True, slots=True)
class CachePrices:
    """Per-token prices in any one unit (per million tokens, or relative to the input price).

    ``cache_write`` is what input written to the cache costs; ``None`` where the provider
    caches automatically and bills writes as plain input (OpenAI).
    """

    input: float
    cached_input: float
    cache_write: float | None = None

    @property
    def write(self) -> float:
        """What a token the cache does not yet hold costs when sent."""
        return self.input if self.cache_write is None else self.cache_write


#: Used when the model's prices are unknown: Anthropic's ratios, the dearer write of the two
#: caching styles, so a boundary is never started on too optimistic a figure.
DEFAULT_PRICES = CachePrices(input=1.0, cached_input=0.1, cache_write=1.25)


@dataclass(frozen=True, slots=True)
class BoundaryShape:
    """What a boundary would leave behind: ``kept_tokens`` of verbatim turns (``K``), a Σ
    snapshot of ``sigma_tokens`` (``s``), ``sigma_growth`` tokens larger than the current
    one (``g``)."""

    kept_tokens: int
    sigma_tokens: int
    sigma_growth: int = 0


def expected_remaining_turns(turns_so_far: int) -> float:
    """A session that has run ``n`` turns is taken to run about ``n`` more (the longer an
    agent loop has gone on, the longer it tends to go on); at least one."""
    return max(1.0, float(turns_so_far))


def boundary_threshold(
    prices: CachePrices,
    expected_remaining: float,
    shape: BoundaryShape,
    *,
    payback_turns: float = DEFAULT_PAYBACK_TURNS,
) -> float:
    """The verbatim-window size in tokens at which a new epoch pays for its cache miss
    (``W`` in the module docstring's rule); ``math.inf`` when it never does."""
    horizon = min(expected_remaining, payback_turns)
    if horizon <= 0 or prices.cached_input <= 0:
        return math.inf
    floor = shape.kept_tokens + shape.sigma_growth
    extra = prices.write - prices.cached_input
    if extra <= 0:
        # Nothing is cheaper for being cached: any token saved is saved at once.
        return float(floor + 1)
    miss = (shape.sigma_tokens + shape.kept_tokens) * extra
    return floor + miss / (horizon * prices.cached_input)


def should_start_epoch(
    window_tokens: int,
    prices: CachePrices,
    expected_remaining: float,
    shape: BoundaryShape,
    *,
    payback_turns: float = DEFAULT_PAYBACK_TURNS,
    force: bool = False,
) -> bool:
    """Whether a window of ``window_tokens`` should be collapsed now. ``force`` (a collapse
    asked for through the API) says yes whatever the cost; the planner still decides where
    the cut may go, and may find none."""
    if force:
        return True
    threshold = boundary_threshold(prices, expected_remaining, shape, payback_turns=payback_turns)
    return window_tokens >= threshold


def prefix_extends(previous: Sequence[Message], client: Sequence[Message]) -> bool:
    """Whether ``client``'s history starts with ``previous`` (append-only), so the epoch
    built from ``previous`` still holds.

    ``previous`` is the client's history the epoch stands for (not the rewritten outbound
    request, which holds Σ). Messages are compared by content: every field but ``cache`` and
    ``hints``, since clients move their cache markers from request to request (Claude Code
    marks its newest message) and hints only describe the original shape.
    """
    if len(client) < len(previous):
        return False
    return all(same_content(old, new) for old, new in zip(previous, client, strict=False))


_IGNORED = frozenset({"cache", "hints"})


def same_content(a: object, b: object) -> bool:
    """Equality of canonical objects, ignoring their ``cache`` markers and ``hints``."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_content(x, y) for x, y in zip(a, b, strict=True))
    if is_dataclass(a) and not isinstance(a, type):
        return all(
            same_content(getattr(a, f.name), getattr(b, f.name))
            for f in fields(a)
            if f.name not in _IGNORED
        )
    return a == b
