"""What a virtual key's budget counts, pure: the period a moment falls in, when it resets,
the most an upstream call may cost (what is reserved before it is sent) and what it did cost
(what is settled after).

The rules:

* A budget's period is a UTC calendar day (``2025-06-01``) or month (``2025-06``); it resets
  at the start of the next.
* A call is reserved at an upper bound of its cost, so that however many calls of one key are
  in flight, their reservations keep its spending under the budget (``storage.spend``):
  its input as many tokens as its body has bytes (a token is at least one byte of text, and
  a body holds its text and more), but for the base64 data of its images, which count
  ``IMAGE_BOUND`` tokens an image (``protocols.embedded``: billed by its pixels, a
  screenshot's megabytes are a few thousand tokens at most), each priced at the dearest of
  the four input rates (plain, cached, cache write of 5 minutes, of 1 hour: every input
  token is billed as one of them),
  and its output as the most it asked for (``max_tokens``, ``max_output_tokens``,
  ``max_completion_tokens``: the largest such field anywhere in the body) or, where it asked
  for no limit, ``output_tokens`` of the gateway's setting, at the output rate.
* A call is settled at what its reply's usage costs (the provider's figures, or the
  gateway's own count where it reported none: ``economics.metered``), priced like the ledger
  prices it; a model the catalog does not price is priced at the ``fallback`` price, never
  at 0.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from decimal import Decimal

from skillstate.conversation import Usage
from skillstate.economics import tokenizer
from skillstate.economics.prices import Catalog, Price, cost
from skillstate.protocols.embedded import Images, images_in

MILLION = 1_000_000
BYTES_PER_TOKEN = 4
"""How a rate limit counts a body's input tokens (as the upstreams' limits do: cheap, the same
on every wire; a rate, unlike a budget, needs no upper bound), its images at
``tokenizer.IMAGE_TOKENS`` each."""
IMAGE_BOUND = 16_384
"""The most tokens a budget's hold counts an image as: above the hosted providers' rules
(Anthropic's some 1,600 for the largest image it does not scale down, OpenAI's high detail a
few thousand) and as much as the largest local default the project knows (Qwen2-VL's 16,384
visual tokens)."""
_ASKED = re.compile(rb'"max_(?:completion_|output_)?tokens"\s*:\s*(\d{1,9})')


def period_of(period: str, now: float) -> str:
    """The name of the ``period`` (day or month) ``now`` falls in, UTC."""
    moment = datetime.datetime.fromtimestamp(now, datetime.UTC)
    return moment.strftime("%Y-%m-%d" if period == "day" else "%Y-%m")


def resets_at(period: str, now: float) -> float:
    """When the ``period`` that ``now`` falls in ends: the start of the next (UTC)."""
    moment = datetime.datetime.fromtimestamp(now, datetime.UTC)
    start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "day":
        return (start + datetime.timedelta(days=1)).timestamp()
    first = start.replace(day=1)
    following = first.replace(year=first.year + 1, month=1) if first.month == 12 else None
    return (following or first.replace(month=first.month + 1)).timestamp()


def estimated_input(body: bytes, images: Images | None = None) -> int:
    """The input tokens a rate limit counts ``body`` as: its text's bytes / 4, and
    ``tokenizer.IMAGE_TOKENS`` an image (``images``: what ``images_in`` found, where known)."""
    images = images_in(body) if images is None else images
    text = len(body) - images.data_bytes
    return text // BYTES_PER_TOKEN + images.count * tokenizer.IMAGE_TOKENS


def asked_output(body: bytes) -> int | None:
    """The most output ``body`` asks for (the largest ``max_*tokens`` field in it), or None
    where it sets no limit."""
    found = [int(number) for number in _ASKED.findall(body)]
    return max(found) if found else None


@dataclass(frozen=True, slots=True)
class Pricer:
    """Prices a key's calls: ``catalog``'s prices, else ``fallback``; ``output_tokens`` is
    the output reserved for a call that sets no limit of its own."""

    catalog: Catalog
    fallback: Price
    output_tokens: int

    def price(self, model: str) -> Price:
        return self.catalog.price(model) or self.fallback

    def bound(self, model: str, body: bytes) -> tuple[float, int]:
        """The most a call of ``model`` sending ``body`` may cost (USD), and the tokens a
        key's ``tpm`` counts it as (its input, estimated, and the output it may produce)."""
        price = self.price(model)
        asked = asked_output(body)
        output = self.output_tokens if asked is None else asked
        dearest = max(price.input, price.cached_input, price.write_5m, price.write_1h)
        images = images_in(body)
        most = len(body) - images.data_bytes + images.count * IMAGE_BOUND
        amount = (most * dearest + output * price.output) / MILLION
        return float(amount), estimated_input(body, images) + output

    def actual(self, model: str, usage: Usage) -> float:
        """What ``usage`` of ``model`` cost (USD)."""
        return float(cost(self.price(model), usage))


def fallback_price(input_usd: float, output_usd: float) -> Price:
    """The price of a model the catalog does not list: ``input_usd`` per million input
    tokens (cached or written alike) and ``output_usd`` per million output tokens."""
    rate = Decimal(str(input_usd))
    return Price(
        rate,
        rate,
        Decimal(str(output_usd)),
        cache_write_5m=rate,
        cache_write_1h=rate,
        source="budget_fallback_price",
    )
