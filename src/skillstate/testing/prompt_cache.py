"""Simulated provider prompt caches, over a request's ``TokenView``. Each takes the time as an
argument (the caller owns the clock) and remembers prefixes by a digest of their tokens, so a
lookup costs one pass over the request whatever the number of earlier requests.

Two models, one per provider's documented behaviour:

* ``AutomaticCache`` (OpenAI): every request is cached; the next one reads the longest prefix,
  in whole ``BLOCK``-token blocks, it shares with any request still within the TTL, provided
  that prefix is at least ``OPENAI_MINIMUM`` tokens.
  https://platform.openai.com/docs/guides/prompt-caching
* ``ExplicitCache`` (Anthropic): only prefixes that end at a ``cache_control`` breakpoint are
  written, and a request reads the longest such prefix it shares, looking at each of its
  breakpoints and up to ``LOOKBACK_BLOCKS`` block boundaries before each.
  https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

from skillstate.testing.token_view import FIVE_MINUTES, TokenView

BLOCK = 128
"""OpenAI caches in increments of 128 tokens."""
OPENAI_MINIMUM = 1024
"""OpenAI caches only prompts of at least 1,024 tokens."""

LOOKBACK_BLOCKS = 20
"""How many block boundaries before a breakpoint Anthropic also checks for an earlier entry."""
ANTHROPIC_MINIMUM = 1024
HAIKU_MINIMUM = 2048


def anthropic_minimum(model: str) -> int:
    """The shortest cacheable prefix for ``model``: 2,048 tokens for a Haiku, else 1,024 (the
    Sonnet and Opus figure, taken for any other name)."""
    return HAIKU_MINIMUM if "haiku" in model.lower() else ANTHROPIC_MINIMUM


def prefix_digests(tokens: tuple[int, ...], offsets: Iterable[int], key: str) -> dict[int, bytes]:
    """A digest of ``key`` and ``tokens[:offset]`` for each offset: equal digests mean equal
    prefixes of one key (blake2b, 128 bits; the offsets only say where to read it off)."""
    raw = memoryview(array("I", tokens).tobytes())
    running = hashlib.blake2b(key.encode(), digest_size=16)
    digests: dict[int, bytes] = {}
    done = 0
    for offset in sorted(set(offsets)):
        running.update(raw[4 * done : 4 * offset])
        done = offset
        digests[offset] = running.copy().digest()
    return digests


class AutomaticCache:
    """OpenAI's automatic prefix cache. ``read`` returns the cached input tokens of a request
    and caches the request:

    * cached = the longest prefix this request shares with an earlier one of the same ``key``
      (model and ``prompt_cache_key``) whose entry has not expired, floored to whole ``BLOCK``s;
      0 when that is under ``OPENAI_MINIMUM`` tokens;
    * every block prefix of this request then expires ``ttl`` seconds from ``now``, so a prefix
      stays cached while requests keep using it (OpenAI: "after 5-10 minutes of inactivity").

    Simplified: no eviction under load and no routing across machines (a real hit is likelier
    than certain); writes are free, as on OpenAI.
    """

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._expiry: dict[bytes, float] = {}

    def read(self, view: TokenView, key: str, now: float) -> int:
        self._expiry = {digest: at for digest, at in self._expiry.items() if at > now}
        offsets = range(BLOCK, len(view) + 1, BLOCK)
        digests = prefix_digests(view.tokens, offsets, key)
        cached = 0
        for offset in offsets:
            if digests[offset] not in self._expiry:
                break
            cached = offset
        for digest in digests.values():
            self._expiry[digest] = now + self.ttl
        return cached if cached >= OPENAI_MINIMUM else 0


@dataclass(frozen=True, slots=True)
class CacheUse:
    """What one request did with an explicit cache: tokens read, and tokens written at the
    5-minute and at the 1-hour price."""

    read: int = 0
    write_5m: int = 0
    write_1h: int = 0


@dataclass(slots=True)
class _Entry:
    expires: float
    ttl: float


class ExplicitCache:
    """Anthropic's ``cache_control`` cache. ``use`` settles one request:

    * read (A): the longest prefix ending at a block boundary that an unexpired entry of the
      same ``key`` (the model) holds, where the boundaries looked at are each breakpoint's
      block and the ``LOOKBACK_BLOCKS`` blocks before it; 0 without breakpoints;
    * write: B is the end of the last 1-hour breakpoint past A (A if none), C the end of the
      last breakpoint (A if not past A); ``B - A`` tokens are written at the 1-hour price and
      ``C - B`` at the 5-minute price, as Anthropic's docs bill mixed TTLs. Nothing is written
      when C is under ``minimum`` tokens (a prompt that short is not cached);
    * every breakpoint of at least ``minimum`` tokens becomes an entry expiring its TTL from
      ``now`` (an entry keeps the later expiry), and the entry read is refreshed for its TTL.

    The rest of the input is uncached. Simplified: no eviction, no check of the 4-breakpoint
    limit here (``Billing.refusal`` does that), and the lookback is exactly 20 blocks where
    Anthropic says "approximately".
    """

    def __init__(self) -> None:
        self._entries: dict[bytes, _Entry] = {}

    def use(self, view: TokenView, key: str, minimum: int, now: float) -> CacheUse:
        self._entries = {d: e for d, e in self._entries.items() if e.expires > now}
        points = view.breakpoints
        if not points:
            return CacheUse()
        boundaries = {
            block
            for point in points
            for block in range(max(0, point.block - LOOKBACK_BLOCKS), point.block + 1)
        }
        digests = prefix_digests(view.tokens, (view.ends[b] for b in boundaries), key)
        read = max((end for end, d in digests.items() if d in self._entries), default=0)
        if read:
            entry = self._entries[digests[read]]
            entry.expires = now + entry.ttl
        last = max(read, points[-1].end)
        if last < minimum:
            return CacheUse(read=read)
        hour = max((p.end for p in points if p.ttl > FIVE_MINUTES and p.end > read), default=read)
        for point in points:
            if point.end >= minimum:
                self._remember(digests[point.end], now, point.ttl)
        return CacheUse(read=read, write_1h=hour - read, write_5m=last - hour)

    def _remember(self, digest: bytes, now: float, ttl: float) -> None:
        entry = self._entries.get(digest)
        if entry is None or entry.expires < now + ttl:
            self._entries[digest] = _Entry(now + ttl, ttl)
