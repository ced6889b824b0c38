"""Billing mode of the scripted upstream: usage reported as a provider bills it, with a
simulated prompt cache, and the bill kept so a test can add up what a run cost.

``ScriptedUpstream(policy, billing=Billing())`` turns it on. For every model request the fake
answers (a stream cut short included; not an error reply or a fault before the answer):

* the input is the request's ``TokenView`` (o200k_base tokens of its tools, system prompt and
  messages, in that order; see ``token_view``);
* the cache is OpenAI's automatic one (``AutomaticCache``) on the Chat and Responses routes,
  Anthropic's ``cache_control`` one (``ExplicitCache``) on the Messages route, or the one
  ``style`` names on every route; with ``caching=False`` there is none, as on many
  OpenAI-compatible servers and local models: all input is billed uncached and the usage
  reports 0 cache reads and writes;
* the reply's usage says so in the wire's own fields: Chat's ``prompt_tokens`` (all input) and
  ``prompt_tokens_details.cached_tokens``; Responses' ``input_tokens`` (all input) and
  ``input_tokens_details.cached_tokens``; Anthropic's ``input_tokens`` (uncached only),
  ``cache_read_input_tokens``, ``cache_creation_input_tokens`` and ``cache_creation``'s 5-minute
  and 1-hour split. The output count is the fake's as ever (the ``Reply``'s ``output_tokens``,
  else ``outcome.estimate_tokens``); the ``Reply``'s input, cached and cache-write counts are
  ignored;
* a ``Charge`` is appended to ``billed``; ``bill()`` sums them and ``Tokens.cost`` prices a sum
  at explicit per-million rates.

With the Anthropic cache, a request with more than ``MAX_BREAKPOINTS`` ``cache_control``
blocks is refused with a 400, as Anthropic's API refuses it; ``/v1/messages/count_tokens``
answers the token view's length.

This module reads requests only as raw JSON and imports none of the gateway's protocol
adapters, state or accounting (of ``economics`` only the o200k_base loader): the gateway's own
estimates are checked against it, not by it. What it
simplifies is said where each piece is defined (``token_view``, ``AutomaticCache``,
``ExplicitCache``); in short: tokens are o200k_base for every model, without the chat template's
special tokens; caches never evict and always hit when they may; output is estimated, not
tokenized.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from skillstate.conversation import Wire
from skillstate.testing.prompt_cache import AutomaticCache, ExplicitCache, anthropic_minimum
from skillstate.testing.token_view import FIVE_MINUTES, TokenView, token_view

Style = Literal["openai", "anthropic"]

MAX_BREAKPOINTS = 4
"""Anthropic takes at most four ``cache_control`` blocks per request."""

_MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Prices:
    """Dollars per million tokens of each kind; ``cached`` is the cache-read rate."""

    input: float
    output: float
    cached: float
    cache_write_5m: float
    cache_write_1h: float

    @classmethod
    def anthropic(cls, input: float, output: float) -> Prices:
        """Anthropic's multipliers: reads 0.1x, 5-minute writes 1.25x, 1-hour writes 2x."""
        return cls(input, output, input * 0.1, input * 1.25, input * 2.0)

    @classmethod
    def openai(cls, input: float, output: float, cached: float) -> Prices:
        """OpenAI's shape: the cached rate is the model's own, writes cost plain input."""
        return cls(input, output, cached, input, input)


@dataclass(frozen=True, slots=True)
class Tokens:
    """Billed token counts. ``input`` is all the input; ``cached`` (read), ``cache_write_5m``
    and ``cache_write_1h`` are parts of it, ``uncached`` is the rest."""

    input: int = 0
    cached: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    output: int = 0

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    @property
    def uncached(self) -> int:
        return self.input - self.cached - self.cache_write

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(
            self.input + other.input,
            self.cached + other.cached,
            self.cache_write_5m + other.cache_write_5m,
            self.cache_write_1h + other.cache_write_1h,
            self.output + other.output,
        )

    def cost(self, prices: Prices) -> float:
        """Dollars at ``prices``: each kind of token at its own rate."""
        return (
            self.uncached * prices.input
            + self.cached * prices.cached
            + self.cache_write_5m * prices.cache_write_5m
            + self.cache_write_1h * prices.cache_write_1h
            + self.output * prices.output
        ) / _MILLION


@dataclass(frozen=True, slots=True)
class Charge:
    """What one request was billed. ``request`` is its index in ``ScriptedUpstream.requests``."""

    request: int
    model: str
    style: Style
    tokens: Tokens


class Billing:
    """The simulated provider's caches and bill (see the module docstring).

    ``style`` picks one cache for every route (None: by route); ``clock`` gives the time in
    seconds (``time.monotonic`` unless a test injects one); ``ttl`` is OpenAI's cache lifetime
    (Anthropic's are the marks' own, five minutes or an hour); ``minimum`` gives Anthropic's
    shortest cacheable prefix for a model; ``caching=False`` is a provider without a prompt
    cache (nothing is ever read from or written to one, and no breakpoint is refused)."""

    def __init__(
        self,
        style: Style | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        ttl: float = FIVE_MINUTES,
        minimum: Callable[[str], int] = anthropic_minimum,
        caching: bool = True,
    ) -> None:
        self.style = style
        self.caching = caching
        self.billed: list[Charge] = []
        self._clock = clock
        self._minimum = minimum
        self._automatic = AutomaticCache(ttl)
        self._explicit = ExplicitCache()

    def style_for(self, wire: Wire) -> Style:
        if self.style is not None:
            return self.style
        return "anthropic" if wire is Wire.MESSAGES else "openai"

    def refusal(self, wire: Wire, view: TokenView) -> str | None:
        """Why the provider refuses the request, or None."""
        marks = len(view.breakpoints)
        if self.caching and self.style_for(wire) == "anthropic" and marks > MAX_BREAKPOINTS:
            return (
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {marks}."
            )
        return None

    def charge(
        self,
        wire: Wire,
        body: Mapping[str, Any],
        *,
        output: int = 0,
        request: int = 0,
        view: TokenView | None = None,
    ) -> Charge:
        """Settle the request ``body`` on ``wire``'s route against the cache as of the clock's
        now, and add it to the bill: ``output`` tokens were answered, ``request`` is its index
        in ``ScriptedUpstream.requests``; ``view`` is its ``token_view`` when already made."""
        if view is None:
            view = token_view(wire, body)
        style = self.style_for(wire)
        model = body.get("model")
        model = model if isinstance(model, str) else ""
        now = self._clock()
        if not self.caching:
            tokens = Tokens(len(view), output=output)
        elif style == "openai":
            key = model
            if isinstance(body.get("prompt_cache_key"), str):
                key += "\x00" + body["prompt_cache_key"]
            tokens = Tokens(len(view), self._automatic.read(view, key, now), output=output)
        else:
            use = self._explicit.use(view, model, self._minimum(model), now)
            tokens = Tokens(len(view), use.read, use.write_5m, use.write_1h, output)
        charge = Charge(request, model, style, tokens)
        self.billed.append(charge)
        return charge

    def bill(self) -> Tokens:
        """The sum of every charge so far."""
        return sum((charge.tokens for charge in self.billed), Tokens())
