"""What each provider's prompt cache has been seen to do: the evidence the pass-through
estimate follows.

A pass-through's cost depends on the cache the provider actually gives, and not every provider
gives the one its wire documents: many OpenAI-compatible servers and local models cache
nothing and report 0 cached tokens on every request. So, per upstream and model, the gateway
compares what the wire's documented rule (``counterfactual.PassThroughCache``) predicts for the
requests it really sent with the cache tokens the provider reported for them:

* a **chance** is a sent request for which the rule predicted cache tokens (a prefix of at least
  the minimum shared with the session's previous request, or a write at a client breakpoint);
* ``predicted`` sums the rule's cache tokens (reads and writes) over the chances, ``reported``
  the provider's own over the same requests, and ``seen`` the provider's over every request.

The estimate's ``Basis`` follows, and says which assumption it used:

* ``automatic`` / ``explicit``: the wire's rule as documented (OpenAI's automatic prefix cache,
  Anthropic's ``cache_control`` breakpoints), while nothing contradicts it: before any chance,
  or (automatic) when the provider served at least what the rule predicted, or (explicit) once
  the provider reported any cache tokens;
* ``observed``: an automatic cache that served less than the rule predicted: the rule's reads
  scaled by the observed share, ``reported / predicted``;
* ``no-cache``: chances came and the provider never reported a cached or written token: the
  estimate has no cache at all;
* ``recorded``: not decided here; the recorder's word for a request that went up as the client
  sent it, whose estimate is what the provider billed (``Recorder``).

Only the provider's own figures count: a reply whose usage the gateway counted itself (the
provider reported none, ``metered.counted``) is no evidence. Pure, no I/O; the state is the
sums, bounded to ``providers`` upstream and model pairs (the least recently used forgotten,
and estimated by the rule again).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Literal

from skillstate.conversation import Usage
from skillstate.economics.counterfactual import Cached

Basis = Literal["recorded", "automatic", "explicit", "observed", "no-cache"]
BASES: tuple[Basis, ...] = ("recorded", "automatic", "explicit", "observed", "no-cache")
"""Every basis, in the order ``/cost`` lists them."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """The sums kept for one upstream and model (see the module docstring)."""

    predicted: int = 0
    reported: int = 0
    seen: int = 0

    @property
    def share(self) -> float:
        """The part of the rule's predicted cache tokens the provider served (at most 1; 1
        before any chance)."""
        if self.predicted <= 0:
            return 1.0
        return min(1.0, self.reported / self.predicted)


class CacheEvidence:
    """Per upstream and model, the ``Evidence`` so far; ``observe`` adds to it, ``follow``
    turns the rule's estimate into the one the evidence supports."""

    def __init__(self, providers: int = 1024) -> None:
        self._limit = providers
        self._kept: OrderedDict[tuple[str, str], Evidence] = OrderedDict()

    def evidence(self, upstream: str, model: str) -> Evidence:
        return self._kept.get((upstream, model), Evidence())

    def observe(
        self, upstream: str, model: str, reported: Usage, predicted: Cached | None = None
    ) -> None:
        """One reply's usage as its provider reported it; ``predicted``: what the wire's rule
        made of the request that was sent (None: not known, the reply only adds to ``seen``)."""
        key = (upstream, model)
        old = self._kept.pop(key, Evidence())
        served = reported.cached_input + reported.cache_write
        new = replace(old, seen=old.seen + served)
        expected = 0 if predicted is None else predicted.cached + predicted.written
        if expected > 0:
            new = replace(new, predicted=new.predicted + expected, reported=new.reported + served)
        self._kept[key] = new
        while len(self._kept) > self._limit:
            self._kept.popitem(last=False)

    def follow(
        self, upstream: str, model: str, rule: Cached, *, explicit: bool
    ) -> tuple[Cached, Basis]:
        """The estimate ``rule`` (the wire's rule for the client's request) as the evidence
        supports it, and the basis it was made on."""
        found = self.evidence(upstream, model)
        documented: Basis = "explicit" if explicit else "automatic"
        if found.predicted <= 0:
            return rule, documented
        if found.seen <= 0:
            return Cached(rule.input), "no-cache"
        share = found.share
        if explicit or share >= 1.0:
            return rule, documented
        return replace(rule, cached=int(rule.cached * share)), "observed"
