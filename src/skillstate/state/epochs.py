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
larger it is than the current one. Prices per token, relative to the input price: ``c`` for
cached input, ``w`` for input written to the cache. From the boundary request on, each request
sends ``W - K - g`` fewer tokens, which would have been cache reads; the boundary request
re-sends the new Σ and the kept turns once at the write price instead of the cached one.

``boundary_verdict`` compares two expected costs over the next ``H`` requests, with and
without the boundary, in input-token units (so a ratio of prices is all it needs):

    saving = H * c * (W - K - g - a)  -  (m + a + s + K) * (w - c)

``a`` is what the boundary adds to every later request besides Σ's growth, and ``m`` the tokens
before the Σ message the boundary makes the provider read afresh. Both are 0 for a later
boundary. At a session's first boundary ``a`` is the internal tools (``skill_state`` and
``recall``, about 500 tokens: until then the session is passed through untouched) and ``m`` the
system prompt and the head, since the tool list changes before them. The first boundary also
pays for its handover round (``state.handover``), ``h``, subtracted from the saving: the whole
request read once more at the cached price, the instruction at the input price and the patch
the model writes at the output price (``Handover``). A boundary starts only
when the saving is larger than the noise: ``NOISE_SHARE`` of what the window would cost over
the horizon without it, and never less than ``NOISE_FLOOR`` tokens (token counts here are the
gateway's estimate, not the provider's).

The prices come from the upstream's wire and the catalog (``upstream_prices``): OpenAI-style
automatic prefix caching (Chat, Responses) bills a write as plain input (``w = 1``); Anthropic's
explicit breakpoints (Messages) bill it at the catalog's 5-minute write rate (1.25).

The horizon ``H`` is the lesser of two figures taken from the session itself:

* how long it will go on: a session that has run ``n`` turns is expected to run about ``n``
  more (``expected_remaining_turns``), at most ``MAX_HORIZON``;
* half the cycle that costs least per turn (``steady_horizon``). With the window growing by
  ``r`` tokens a turn (measured over the current window) and each boundary re-sending
  ``B = s + K`` at ``w - c`` extra, collapsing every ``L`` turns costs per turn
  ``B (w - c) / L + c r L / 2`` plus what does not depend on ``L``; the least is at
  ``L* = sqrt(2 B (w - c) / (c r))``, and the rule above fires at ``W - K = r L*`` exactly when
  ``H = L* / 2``. A longer horizon would collapse too often (misses piling up), a shorter
  one too late.

Worked example, OpenAI (gpt-4.1: cached input 0.25 of input, writes at 1): a coding loop at
turn 14, window ``W = 16,000`` tokens over 14 turns (``r`` = 1,143), first boundary: ``K =
4,200``, ``s = 600`` (so ``g = 600``), ``a = 500``, ``m = 2,000``. ``B = 4,800``, ``L* =
sqrt(2 * 4,800 * 0.75 / (0.25 * 1,143)) = 5.0``, ``H = min(14, 2.5) = 2.5``. Saving ``= 2.5 *
0.25 * (16,000 - 4,200 - 600 - 500) - 7,300 * 0.75 = 6,687.5 - 5,475 = 1,212.5``; the noise bar
is ``max(256, 0.05 * 2.5 * 0.25 * 16,000) = 500``: the boundary starts. At turn 6 with ``W =
7,000`` (``H = min(6, 3.3)``) the saving is ``3.3 * 0.25 * 1,700 - 5,475 < 0``: it does not.

Worked example, Anthropic (claude-sonnet-4-5: read 0.1, write 1.25), the same session:
``w - c = 1.15``, ``L* = sqrt(2 * 4,800 * 1.15 / (0.1 * 1,143)) = 9.8``, ``H = min(14, 4.9) =
4.9``. Saving ``= 4.9 * 0.1 * 10,700 - 7,300 * 1.15 = 5,243 - 8,395 < 0``: no boundary yet;
the write premium and the cheaper read make Anthropic wait for a larger window (at ``W =
24,000`` over 21 turns, ``r`` = 1,143, the saving is ``4.9 * 0.1 * 18,700 - 8,395 = 768``
against a bar of ``max(256, 0.05 * 4.9 * 0.1 * 24,000) = 588``: it starts).

The handover at the first boundary, the same session: it re-reads the whole request once at the
cached price (``2,000 + W`` tokens: the system prompt and the window), adds about 400 tokens of
instruction and 300 of the model's patch at the output price (gpt-4.1: 4x input; Sonnet: 5x).
At ``W = 16,000`` that is ``h = 0.25 * 18,000 + 400 + 4 * 300 = 6,100`` on OpenAI and ``0.1 *
18,000 + 400 + 5 * 300 = 3,700`` on Anthropic: neither boundary starts. The first one waits for
a larger window: at ``W = 40,000`` over 35 turns (``h`` = 12,100 and 6,100) the savings are
4,199 and 2,557 against bars of 1,255 and 983; both start.

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

from skillstate.conversation import Message, Wire


@dataclass(frozen=True, slots=True)
class CachePrices:
    """Per-token prices in any one unit (per million tokens, or relative to the input price).

    ``cache_write`` is what input written to the cache costs; ``None`` where the provider
    caches automatically and bills writes as plain input (OpenAI).
    """

    input: float
    cached_input: float
    cache_write: float | None = None
    output: float | None = None
    """What an output token costs; ``None``: ``DEFAULT_OUTPUT_RATIO`` times the input price."""

    @property
    def write(self) -> float:
        """What a token the cache does not yet hold costs when sent."""
        return self.input if self.cache_write is None else self.cache_write

    @property
    def output_price(self) -> float:
        return DEFAULT_OUTPUT_RATIO * self.input if self.output is None else self.output


DEFAULT_OUTPUT_RATIO = 4.0
"""Output over input price where the catalog does not say (4 to 5 for the listed models)."""


#: Used when the model's prices are unknown: Anthropic's ratios, the dearer write of the two
#: caching styles, so a boundary is never started on too optimistic a figure.
DEFAULT_PRICES = CachePrices(input=1.0, cached_input=0.1, cache_write=1.25)

#: The defaults per caching style, relative to the input price: automatic prefix caching
#: (OpenAI's Chat and Responses) reads at 0.1 and writes at the input price; explicit
#: breakpoints (Anthropic's Messages) read at 0.1 and write at 1.25.
AUTOMATIC_PRICES = CachePrices(input=1.0, cached_input=0.1)
BREAKPOINT_PRICES = DEFAULT_PRICES

MAX_HORIZON = 32.0
"""The longest horizon a boundary is priced over, whatever the session's length says."""

NOISE_SHARE = 0.05
"""A boundary's expected saving must pass this share of the window's cost over the horizon."""

NOISE_FLOOR = 256.0
"""... and this many input tokens' worth: smaller savings are within the error of the
gateway's token estimate."""


def upstream_prices(
    wire: Wire,
    *,
    cached_input: float | None = None,
    cache_write: float | None = None,
    output: float | None = None,
) -> CachePrices:
    """The cache prices of an upstream on ``wire``, relative to its input price.

    ``cached_input`` and ``cache_write`` are the model's ratios to its input price where the
    price catalog knows them (cached_input / input, cache_write_5m / input); the wire's
    defaults otherwise (``output`` likewise, output / input). Chat and Responses upstreams
    cache automatically, so a write costs plain input whatever ``cache_write`` says; Messages
    upstreams write at a premium.
    """
    if wire is Wire.MESSAGES:
        base = BREAKPOINT_PRICES
        write = base.cache_write if cache_write is None else cache_write
        read = base.cached_input if cached_input is None else cached_input
        return CachePrices(input=1.0, cached_input=read, cache_write=write, output=output)
    read = AUTOMATIC_PRICES.cached_input if cached_input is None else cached_input
    return CachePrices(input=1.0, cached_input=read, output=output)


@dataclass(frozen=True, slots=True)
class BoundaryShape:
    """What a boundary would leave behind: ``kept_tokens`` of verbatim turns (``K``), a Σ
    snapshot of ``sigma_tokens`` (``s``), ``sigma_growth`` tokens larger than the current
    one (``g``)."""

    kept_tokens: int
    sigma_tokens: int
    sigma_growth: int = 0
    added_tokens: int = 0
    """``a``: tokens the boundary adds to every later request besides Σ's growth (the
    internal tools, at a session's first boundary)."""
    prefix_miss: int = 0
    """``m``: tokens before the Σ message the boundary makes the provider read afresh (the
    system prompt and the head, at a session's first boundary)."""
    handover: Handover | None = None
    """The handover round a session's first boundary starts with (``state.handover``)."""


@dataclass(frozen=True, slots=True)
class Handover:
    """The handover round's cost: the whole request read once more (``reread_tokens``, at the
    cached price: its prefix is the previous request's), the instruction sent uncached
    (``instruction_tokens``) and the patch the model writes (``reply_tokens``, at the output
    price)."""

    reread_tokens: int
    instruction_tokens: int
    reply_tokens: int

    def cost(self, prices: CachePrices) -> float:
        """In input-token units."""
        return (
            self.reread_tokens * prices.cached_input
            + self.instruction_tokens * prices.input
            + self.reply_tokens * prices.output_price
        ) / prices.input


def expected_remaining_turns(turns_so_far: int) -> float:
    """A session that has run ``n`` turns is taken to run about ``n`` more (the longer an
    agent loop has gone on, the longer it tends to go on); at least one."""
    return max(1.0, float(turns_so_far))


@dataclass(frozen=True, slots=True)
class Verdict:
    """What ``boundary_verdict`` found, in input-token units: the expected ``saving`` of a
    boundary now over ``horizon`` requests, and the ``margin`` it had to pass."""

    starts: bool
    saving: float
    margin: float
    horizon: float


def steady_horizon(prices: CachePrices, shape: BoundaryShape, growth_per_turn: float) -> float:
    """Half the boundary cycle that costs least per turn, ``L* / 2`` with ``L* = sqrt(2 B (w -
    c) / (c r))`` (the module docstring); ``MAX_HORIZON`` where nothing bounds it (no growth,
    no cache discount)."""
    extra = prices.write - prices.cached_input
    rebuilt = shape.sigma_tokens + shape.kept_tokens
    if growth_per_turn <= 0 or prices.cached_input <= 0 or extra <= 0:
        return MAX_HORIZON
    cycle = math.sqrt(2 * rebuilt * extra / (prices.cached_input * growth_per_turn))
    return min(MAX_HORIZON, max(1.0, cycle / 2))


def boundary_verdict(
    window_tokens: int,
    prices: CachePrices,
    shape: BoundaryShape,
    *,
    turns_so_far: int,
    window_turns: int,
) -> Verdict:
    """Whether a boundary on a window of ``window_tokens`` (over ``window_turns`` turns, in a
    session of ``turns_so_far``) pays: its expected saving over the horizon against the
    noise margin. The rule and a worked example per provider are the module docstring's."""
    c = prices.cached_input / prices.input
    w = prices.write / prices.input
    growth = window_tokens / window_turns if window_turns > 0 else 0.0
    horizon = min(
        expected_remaining_turns(turns_so_far), MAX_HORIZON, steady_horizon(prices, shape, growth)
    )
    per_request = window_tokens - shape.kept_tokens - shape.sigma_growth - shape.added_tokens
    rebuilt = shape.prefix_miss + shape.added_tokens + shape.sigma_tokens + shape.kept_tokens
    saving = horizon * c * per_request - rebuilt * max(0.0, w - c)
    if shape.handover is not None:
        saving -= shape.handover.cost(prices)
    margin = max(NOISE_FLOOR, NOISE_SHARE * horizon * min(c, w) * window_tokens)
    return Verdict(saving > margin, saving, margin, horizon)


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


_IGNORED = frozenset({"cache", "hints", "counted"})


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
