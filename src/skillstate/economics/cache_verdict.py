"""Why the provider's prompt cache missed: a verdict for each upstream request.

The ledger records, beside what each upstream request cost, whether the provider's cache
could have served it and why it did not (``/cost``'s ``cache_verdicts``, by session), so that
a user sees when a client, or the gateway, breaks their cache. The verdict compares the
request the gateway sent with the one it sent before in the session (to the same upstream),
as a prefix cache sees them (``counterfactual.Blocks``: the head, then one block per
message), and, where the two part, the client's two requests likewise:

* ``hit``: the provider reported cached tokens;
* ``first``: the session's first request to that upstream: nothing was cached for it yet;
* ``expired``: longer since the previous request than the cache keeps an entry (five minutes
  for breakpoints; ten for an automatic cache, ``counterfactual``'s rule);
* ``unmarked``: a provider that caches only at breakpoints (Anthropic's) and a request that
  set none;
* ``short``: the request holds all of the previous one, but that is less than the provider's
  minimum (1,024 tokens);
* ``client-head`` / ``client-history``: the client changed its system prompt or tools (on
  every wire: Chat's system message counts as the head, ``Blocks.opening``), or its history
  (an edit, a rewind, a host's compaction), within the first 1,024 tokens;
* ``boundary``: the gateway's epoch boundary rewrote it there, the miss the boundary was
  priced for (``state.epochs``);
* ``gateway-head`` / ``gateway-history``: the gateway changed what it sent there outside a
  boundary (the tools it offers, a view): where this shows up, something breaks the cache
  that should not;
* ``provider``: the request shares at least the minimum with the previous one (all of it, or
  up to where it changed: a note the gateway moves to the end, a newer view), and the
  provider still cached nothing (it does not cache, or evicted it).

* ``unreported``: the provider reported no usage (a reply without counts, whose tokens the
  gateway counted itself; a call that failed): there is nothing to judge.

The gateway's own rounds (a continuation after it answered its own tool, a handover) repeat a
request sent moments before and add to it: ``hit``, else ``short`` or ``provider``
(``Recorder``). A request relayed undecoded
(``server.express``) gets its verdict from the recorder (``Recorder._relayed_verdict``): the
plain causes without decoding, the rest by this function on the two requests decoded. Pure,
no I/O.
"""

from __future__ import annotations

from array import array

from skillstate.conversation import Usage
from skillstate.economics.counterfactual import (
    AUTOMATIC_MIN,
    AUTOMATIC_TTL,
    TTL,
    Blocks,
    common_prefix,
)

Previous = tuple["array[int]", float]
"""A session's previous request as the verdict compares with it: its chain of hashes, and
when it was sent."""

VERDICTS = (
    "hit",
    "first",
    "expired",
    "unmarked",
    "short",
    "client-head",
    "client-history",
    "boundary",
    "gateway-head",
    "gateway-history",
    "provider",
    "unreported",
)
"""Every verdict, in the order ``/cost`` lists them."""
NOT_MISSES = frozenset({"hit", "first", "unreported"})
"""The verdicts that say no cache was broken: a hit, a cold start, nothing to judge."""


def cache_verdict(
    reported: Usage,
    *,
    sent: Blocks,
    before: Previous | None,
    client: Blocks,
    client_before: Previous | None,
    now: float,
    explicit: bool,
    boundary: bool,
) -> str:
    """The verdict on a request the gateway sent (``sent``), whose provider reported
    ``reported``; ``before``: the session's previous request to that upstream; ``client``
    and ``client_before``: the client's own two requests; ``explicit``: the provider caches
    at breakpoints only; ``boundary``: the request is an epoch boundary's."""
    if reported.cached_input > 0:
        return "hit"
    if before is None:
        return "first"
    chain, at = before
    if now - at > (TTL[None] if explicit else AUTOMATIC_TTL):
        return "expired"
    if explicit and not sent.marks:
        return "unmarked"
    shared = common_prefix(chain, sent.chain)
    if shared and sent.ends[shared - 1] >= AUTOMATIC_MIN:
        return "provider"  # enough was the same to be served from the cache
    if shared >= len(chain):  # all the previous request is in this one, and it is short
        return "short"
    if client_before is not None:
        kept = common_prefix(client_before[0], client.chain)
        if kept < len(client_before[0]):
            return "client-head" if kept < client.opening else "client-history"
    if boundary:
        return "boundary"
    return "gateway-head" if shared == 0 else "gateway-history"
