"""A virtual key's budget and rate limits, applied to every upstream call made for it.

``Forward`` (the one upstream door) asks ``reserve`` before each call of a request that came
with a key (every round of the round loop, the relayed and express paths, a compaction):

* the key's ``rpm``/``tpm`` (``storage.keys.KeyLimits``) admit the call through the gateway's
  own limiter kinds (this process's, the SQLite file of its ``--workers``, or Redis shared by
  every gateway), keyed by the key's id; a call that would wait past the limiter's patience
  is refused;
* the key's budget holds the most the call may cost (``economics.allowance``) in the
  spending store (``storage.spend``), or refuses it when the period's spent and held leave
  no room.

A refusal is a 429 of the gateway's own, before anything is sent, in the client's wire
(``errors.failure_response``), saying why and when it resets, with ``retry-after``. A call
that failed before a reply (the upstream refused it, could not be reached, the client went)
has its hold released; once the request has ended (``Forward``'s exchange goes to the
observers), each call's hold is settled at what its reply cost as the ledger counts it
(the provider's usage, streamed or not, or the gateway's count of a stream that ended
without one, or that the client left: never 0), off the request path. A call that replied
but whose usage nobody could count (no exchange records it) is settled at what it held.

A request without a key, or whose key has no limits, costs one check of the key ring's
``ever_active`` flag in ``Forward`` and nothing here.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import math
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skillstate.conversation import ErrorKind
from skillstate.economics.allowance import Pricer, period_of, resets_at
from skillstate.economics.exchange import Exchange
from skillstate.economics.ledger.relayed import replies_counted
from skillstate.server.guard import caller_of
from skillstate.server.replies import UpstreamFailure
from skillstate.storage.keys import VirtualKey
from skillstate.storage.spend import Hold, SpendStore, Tally
from skillstate.upstream.limits import RateLimit

if TYPE_CHECKING:
    from skillstate.server.forward import Forward
from skillstate.server.outbound import Outbound

__all__ = ["Budgets", "Charge", "Hold", "release", "reserve", "settle"]

log = logging.getLogger("skillstate.budgets")


@dataclass(slots=True)
class Budgets:
    """The gateway's spending store and prices, and the settlements under way."""

    store: SpendStore
    pricer: Pricer
    clock: Callable[[], float] = time.time
    _pending: set[asyncio.Task[None]] = field(default_factory=set)

    def later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` off the request path, kept until done."""
        task = asyncio.ensure_future(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def drain(self) -> None:
        """Until every settlement and release started so far is written."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)


@dataclass(slots=True)
class Charge:
    """What one client request of ``key`` holds: a hold per upstream call that replied."""

    key: VirtualKey
    holds: list[Hold] = field(default_factory=list)


async def reserve(forward: Forward, outbound: Outbound) -> Hold | None:
    """Admit one call of ``forward``'s request by its key's limits and hold its most
    possible cost against its budget (None: no budget holds it); ``UpstreamFailure`` (429)
    when refused."""
    gateway = forward.gateway
    budgets = gateway.budgets
    key = caller_of(forward.http, gateway)
    if budgets is None or key is None or not key.limits.any:
        return None
    limits = key.limits
    model = forward.exchange.model if forward.exchange is not None else ""
    body = outbound.body or b""
    amount, tokens = budgets.pricer.bound(model, body)
    hold = None
    if limits.budget_usd is not None:
        now = budgets.clock()
        period = period_of(limits.period, now)
        granted = await budgets.store.reserve(key.id, period, amount, limits.budget_usd, now)
        if isinstance(granted, Tally):
            raise _over_budget(forward, key, granted, amount, now)
        hold = granted
    if limits.rpm is not None or limits.tpm is not None:
        try:
            await _admit(forward, key, tokens)
        except BaseException:
            if hold is not None:
                budgets.later(budgets.store.release(hold))
            raise
    if hold is not None:
        if forward.charge is None:
            forward.charge = Charge(key)
        forward.charge.holds.append(hold)
    return hold


def release(forward: Forward, hold: Hold) -> None:
    """The call ``hold`` was made for failed before any reply: nothing is spent."""
    budgets = forward.gateway.budgets
    charge = forward.charge
    if budgets is None or charge is None:
        return
    charge.holds.remove(hold)
    budgets.later(budgets.store.release(hold))


def settle(forward: Forward) -> None:
    """The request has ended: settle each hold at what its call cost (off the request
    path)."""
    budgets, charge = forward.gateway.budgets, forward.charge
    if budgets is None or charge is None or not charge.holds:
        return
    holds, charge.holds = charge.holds, []
    budgets.later(_settled(budgets, holds, forward.exchange))


async def _settled(budgets: Budgets, holds: list[Hold], exchange: Exchange | None) -> None:
    try:
        costs = [] if exchange is None else await asyncio.to_thread(_costs, budgets, exchange)
        for number, hold in enumerate(holds):
            actual = costs[number] if number < len(costs) else hold.amount
            if number == len(holds) - 1:
                actual += sum(costs[len(holds) :])
            await budgets.store.settle(hold, actual)
    except Exception:
        log.exception("a key's spending could not be settled: its holds expire instead")


def _costs(budgets: Budgets, exchange: Exchange) -> list[float]:
    """What each reply of ``exchange`` cost, as the ledger counts it (``economics.metered``)
    and priced by ``budgets`` (the fallback price where the catalog has none)."""
    counts, model = replies_counted(exchange)
    return [budgets.pricer.actual(model, usage) for usage, _ in counts]


async def _admit(forward: Forward, key: VirtualKey, tokens: int) -> None:
    """Wait for the key's rate limit, or refuse with a 429."""
    limits = key.limits
    limit = forward.gateway.window(f"key:{key.id}", limits.rpm, limits.tpm)
    admission = limit.admit(tokens) if isinstance(limit, RateLimit) else await limit.admit(tokens)
    if admission.wait_s is None:
        caps = [f"{limits.rpm} requests" if limits.rpm else ""]
        caps.append(f"{limits.tpm:,} tokens" if limits.tpm else "")
        said = " and ".join(cap for cap in caps if cap)
        wait = admission.retry_after_s
        headers = {}
        if wait:
            why = f"over its limit of {said} a minute; it has room again in {wait:.0f}s"
            headers["retry-after"] = str(max(1, math.ceil(wait)))
        else:
            why = f"this request's ~{tokens:,} tokens alone are over its limit of {said} a minute"
        raise _refusal(forward, f"key {key.id} (tenant {key.tenant}): {why}", headers)
    if admission.wait_s > 0:
        await asyncio.sleep(admission.wait_s)


def _over_budget(
    forward: Forward, key: VirtualKey, tally: Tally, amount: float, now: float
) -> UpstreamFailure:
    limits = key.limits
    assert limits.budget_usd is not None
    budget = f"${limits.budget_usd:,.2f} a {limits.period}"
    who = f"key {key.id} (tenant {key.tenant})"
    if amount > limits.budget_usd:
        message = (
            f"{who}: this request may cost up to ${amount:,.4f}, more than its whole budget of"
            f" {budget}; ask for less output (max_tokens) or send less"
        )
        return _refusal(forward, message, {})
    reset = resets_at(limits.period, now)
    when = datetime.datetime.fromtimestamp(reset, datetime.UTC).isoformat().replace("+00:00", "Z")
    message = (
        f"{who}: its budget of {budget} is spent (${tally.spent:,.4f} spent, ${tally.held:,.4f}"
        f" held by requests in flight, this request may cost up to ${amount:,.4f});"
        f" it resets at {when}"
    )
    return _refusal(forward, message, {"retry-after": str(max(1, math.ceil(reset - now)))})


def _refusal(forward: Forward, message: str, headers: dict[str, str]) -> UpstreamFailure:
    return UpstreamFailure(
        429, ErrorKind.RATE_LIMIT, message, wire=forward.wire, headers=headers, local=True
    )
