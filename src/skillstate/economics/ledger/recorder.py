"""From exchanges to ledger rows and metrics, off the request path.

The recorder is an ``Exchange`` observer: it only queues the exchange. A task of its own
turns each into rows (one per upstream reply, the first carrying the pass-through estimate),
in the order they came, so a session's requests are estimated one after the other, and writes
them in batches. ``flush`` waits until everything queued is written: /cost, /metrics and the
tests read after it."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from skillstate.conversation import Usage, Wire
from skillstate.conversation.prefixes import PrefixMemo
from skillstate.economics.cache_evidence import Basis, CacheEvidence
from skillstate.economics.cache_verdict import cache_verdict
from skillstate.economics.catalog_age import utc_day
from skillstate.economics.counterfactual import (
    AUTOMATIC_MIN,
    AUTOMATIC_TTL,
    TTL,
    Blocks,
    Cached,
    PassThroughCache,
    blocks_of,
    calibration,
)
from skillstate.economics.exchange import Exchange
from skillstate.economics.ledger.metrics import Metrics
from skillstate.economics.ledger.relayed import decoded_request, holds_all, replies_counted
from skillstate.economics.ledger.row import LOCAL, SUBSCRIPTION, Row
from skillstate.economics.ledger.store import LedgerStore
from skillstate.support.caches import SessionCache

log = logging.getLogger("skillstate.economics.ledger")

Pricing = Callable[[str, Usage], float | None]
"""The cost of ``usage`` on ``model`` in USD, or None when the model has no price."""

Listener = Callable[[Exchange, list[Row], bool], None]
"""Told each exchange with its rows once they are made, and whether it began an epoch, on the
ledger's thread (the traces of ``server.telemetry``): one that fails is logged and skipped."""

DAY = 86_400.0
_BATCH = 256
_LINGER_S = 0.05
"""How long an exchange waits for others to join its batch: one transaction writes the rows
of that window (a commit and its trip to the database thread cost a few hundred microseconds,
as much as the rest of a short request's handling)."""
_SWEEP_EVERY = 3_600.0
_SENT: PrefixMemo[Blocks] = PrefixMemo()
"""The blocks of the requests the gateway sent, apart from the clients' own."""
_DEFERRED_BYTES = 16 * 1024 * 1024
"""What the bodies of the sessions' last relayed requests may hold at most (a session pushed
out is estimated against a cold cache)."""
_Deferred = tuple[bytes, Wire, str, Wire, tuple[Usage, bool], float]
"""A relayed request as ``_catch_up`` reads it: its body, the client's wire, the upstream and
its wire, its round's usage, when it was recorded (not the exchange: its reply's bytes would
stay with it)."""
_EPOCH = re.compile(r"(?:^|; )state=[^;]*:epoch(\d+)")


class Recorder:
    """Queues exchanges and writes their rows; start it with the server, close it after."""

    def __init__(
        self,
        ledger: LedgerStore,
        pricing: Pricing,
        *,
        metrics: Metrics | None = None,
        retention_days: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ledger = ledger
        self.metrics = metrics or Metrics()
        self._pricing = pricing
        self._retention = retention_days * DAY
        self._clock = clock
        self._cache = PassThroughCache(clock=clock)
        """The cache a pass-through's requests would have had, per session."""
        self._sent = PassThroughCache(clock=clock)
        """The same rule over the requests the gateway sent, per upstream and session."""
        self._evidence = CacheEvidence()
        self.listeners: list[Listener] = []
        self._queue: asyncio.Queue[Exchange | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._hurry = asyncio.Event()
        """Set while someone waits for the queue to be written (``flush``, ``close``)."""
        self._epochs: OrderedDict[str, int] = OrderedDict()
        self._swept = 0.0
        self._deferred: SessionCache[_Deferred] = SessionCache(
            entries=1024, max_bytes=_DEFERRED_BYTES, weigh=lambda kept: len(kept[0])
        )
        """Per session, its last request relayed as bytes, read only if a later request of
        the session is estimated against it (``_catch_up``)."""

    def today(self) -> datetime.date:
        """The UTC day it is by the ledger's clock (the price catalog's age is told by it)."""
        return utc_day(self._clock())

    # --- the observer ---------------------------------------------------------------------

    def __call__(self, exchange: Exchange) -> None:
        self._queue.put_nowait(exchange)

    # --- life -----------------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is None:
            await self._sweep()
            self._task = asyncio.create_task(self._run(), name="skillstate-ledger")

    async def flush(self) -> None:
        """Until every exchange queued so far is in the ledger."""
        if self._task is not None:
            self._hurry.set()
            try:
                await self._queue.join()
            finally:
                self._hurry.clear()
        else:  # not started (a test, a closed gateway): do the work here
            await self._write(self._drain())

    async def close(self) -> None:
        if self._task is not None:
            self._hurry.set()
            self._queue.put_nowait(None)
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._write(self._drain())

    async def _run(self) -> None:
        while True:
            first = await self._queue.get()
            if first is not None and not self._hurry.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._hurry.wait(), _LINGER_S)
            batch = [first, *self._drain(_BATCH)]
            try:
                await self._write([e for e in batch if e is not None])
            except Exception:
                log.exception("ledger: %d exchanges could not be recorded", len(batch))
            finally:
                for _ in batch:
                    self._queue.task_done()
            if any(exchange is None for exchange in batch):  # close() was called
                return
            if self._clock() - self._swept > _SWEEP_EVERY:
                await self._sweep()

    def _drain(self, limit: int | None = None) -> list[Exchange | None]:
        out: list[Exchange | None] = []
        while not self._queue.empty() and (limit is None or len(out) < limit):
            out.append(self._queue.get_nowait())
        return out

    async def _write(self, exchanges: list[Exchange | None]) -> None:
        done = [exchange for exchange in exchanges if exchange is not None]
        if not done:
            return
        # Counting and hashing a long history takes milliseconds: on the database's thread
        # (SQLite's own, a worker's for PostgreSQL), so the event loop keeps serving
        # meanwhile; the whole batch in one trip, in its order, written and counted in
        # /metrics there.
        await self.ledger.append_made(lambda: self._rows_of(done))

    def _rows_of(self, exchanges: list[Exchange]) -> list[Row]:
        """The batch's rows, made on the database's thread. The interpreter's lock is let go
        after each exchange: a thread that keeps it is made to let go only after the switch
        interval (5 ms), so a batch made in one go held every request that came meanwhile
        that long (the gateway's tail at concurrency 1: one request in a hundred 5 ms late)."""
        rows: list[Row] = []
        for exchange in exchanges:
            boundary = bool(self.listeners) and self._boundary(exchange)
            made = self.rows(exchange)
            rows += made
            for listener in self.listeners:
                try:
                    listener(exchange, made, boundary)
                except Exception:
                    log.exception("ledger: listener %r failed", listener)
            time.sleep(0)  # lets the event loop's thread take the lock if it waits for it
        self.metrics.rows(rows)
        return rows

    async def _sweep(self) -> None:
        self._swept = self._clock()
        try:
            gone = await self.ledger.sweep(self._swept - self._retention)
        except Exception:
            log.exception("ledger: the retention sweep failed")
            return
        if gone:
            log.info("ledger: %d rows older than %g days removed", gone, self._retention / DAY)

    # --- rows -----------------------------------------------------------------------------

    def rows(self, exchange: Exchange) -> list[Row]:
        """The rows of ``exchange``: one per upstream reply (one for a request that got none,
        whose tokens are none: an upstream that answered with an error bills nothing), the
        first with the pass-through estimate. Estimates in the session's order. A reply whose
        provider reported no usage is counted here, from the request and the reply, and its
        row says so (``Row.estimated``)."""
        now = self._clock()
        counts, model = replies_counted(exchange)
        replied = bool(counts)
        counts = counts or [(Usage(), False)]
        login = exchange.login.value
        priced = login != SUBSCRIPTION
        rows = []
        main, verdict = _main_round(exchange.causes), ""
        for number, (usage, estimated) in enumerate(counts):
            status = exchange.status if number == len(counts) - 1 else 200
            cost = self._cost(model, usage) if priced else None
            first = self._first(exchange, counts, replied, cost, model, now) if not number else {}
            verdict = first.pop("cache_verdict", verdict)
            told = _told(usage, estimated or not replied, verdict if number == main else None)
            rows.append(
                Row(
                    ts=now,
                    request_id=exchange.request_id,
                    round=number,
                    session=exchange.session,
                    client_wire=exchange.client_wire.value,
                    upstream=exchange.upstream,
                    model=model,
                    mode=exchange.mode,
                    lanes=exchange.lanes,
                    status=status,
                    streamed=exchange.streamed,
                    input=usage.input,
                    cached_input=usage.cached_input,
                    cache_write=usage.cache_write,
                    cache_write_1h=usage.cache_write_1h,
                    output=usage.output,
                    reasoning=usage.reasoning,
                    cost_usd=cost,
                    cause=_cause(exchange.causes, number),
                    estimated=estimated,
                    login=login,
                    cache_verdict=told,
                    **first,
                )
            )
        self._count_collapse(exchange)
        return rows

    def _cost(self, model: str, usage: Usage) -> float | None:
        if not (usage.input or usage.output or usage.cached_input or usage.cache_write):
            return 0.0
        return self._pricing(model, usage)

    def _first(
        self,
        exchange: Exchange,
        counts: list[tuple[Usage, bool]],
        replied: bool,
        cost: float | None,
        model: str,
        now: float,
    ) -> dict[str, Any]:
        """What the first row of ``exchange`` says besides its round's usage (whose ``cost``
        is given): the gateway's time, the attempts, and what a pass-through would have sent
        and paid for the client request (``counts``: each round's usage, and whether it is the
        gateway's own count; ``replied``: a reply came).

        A request that went upstream as the client sent it (its bytes, or its request no lane
        changed, in the upstream's wire), in one round, is its own pass-through: the estimate
        is what was recorded (basis ``recorded``), so it saves exactly 0; so is a request that
        got no reply (nothing billed), and one an Anthropic subscription billed (no per-token
        price on either side). Any other is the wire's cache rule for the client's
        request, as the provider's own usage so far supports it (``cache_evidence``).

        A request relayed as bytes is as sent: its own estimate. What the session's caches
        would learn of it waits until a later request of the session needs it (``_catch_up``):
        a session passed through to its end never has its requests decoded."""
        overhead = exchange.overhead_s * 1000 if exchange.overhead_s is not None else None
        first: dict[str, Any] = {
            "overhead_ms": overhead,
            "upstream_ms": exchange.upstream_s * 1000 if exchange.upstream != LOCAL else 0.0,
            "attempts": ",".join(str(status) for status in exchange.attempts),
        }
        # Estimated whatever comes next: the session's caches and the evidence follow every
        # request, so that the next one is estimated against this one.
        if exchange.relayed is not None:
            body = exchange.relayed.body
            wires = (exchange.client_wire, exchange.upstream, exchange.upstream_wire)
            first["cache_verdict"] = self._relayed_verdict(exchange, counts[0], now)
            self._deferred.put(exchange.session, (body, *wires, counts[0], now))
            cached, basis = Cached(0), "recorded"
        else:
            self._catch_up(exchange.session)
            cached, basis, first["cache_verdict"] = self._pass_through(exchange, counts, now)
        own = exchange.sent is None or exchange.sent is exchange.request
        as_sent = exchange.forwarded_original or (own and exchange.rounds > 0)
        failed = exchange.status >= 400 and not replied
        subscription = exchange.login.value == SUBSCRIPTION
        if (as_sent and len(counts) == 1) or failed or subscription:
            recorded = counts[0][0]
            first.update(
                passthrough_input=recorded.input,
                passthrough_cached_input=recorded.cached_input,
                passthrough_cache_write=recorded.cache_write,
                passthrough_cost_usd=cost,
                estimate_basis="recorded",
            )
            return first
        answer = counts[-1][0]  # what the client got: a pass-through makes that call alone
        usage = Usage(
            input=cached.input,
            output=answer.output,
            cached_input=cached.cached,
            cache_write=cached.written,
            reasoning=answer.reasoning,
            cache_write_1h=cached.written_1h,
        )
        first.update(
            passthrough_input=cached.input,
            passthrough_cached_input=cached.cached,
            passthrough_cache_write=cached.written,
            passthrough_cost_usd=self._cost(model, usage),
            estimate_basis=basis,
        )
        return first

    def _pass_through(
        self, exchange: Exchange, counts: list[tuple[Usage, bool]], now: float
    ) -> tuple[Cached, Basis, str]:
        """The input a pass-through of the client's request would have sent, as the provider
        would have billed it, the basis of that estimate, and the verdict on the cache of the
        request that sent it (``cache_verdict``); this exchange's evidence is learnt first."""
        request = exchange.request
        assert request is not None  # a relayed request is estimated as sent
        blocks = blocks_of(request)
        sent = exchange.sent
        # Where the client's own request went upstream, its blocks are those of what was sent.
        sent_blocks = blocks if sent is None or sent is request else blocks_of(sent, _SENT)
        main = _main_round(exchange.causes)
        # Without a reply to the client's own round (it failed after a handover), or with one
        # whose provider reported no usage, there is nothing to calibrate the local count by.
        reported = main < len(counts) and not counts[main][1]
        ratio = calibration(counts[main][0].input, sent_blocks.total) if reported else 1.0
        explicit = exchange.upstream_wire is Wire.MESSAGES
        sent_before = self._sent.previous(f"{exchange.upstream}\x00{exchange.session}")
        client_before = self._cache.previous(exchange.session)
        self._learn(exchange, counts, main, sent_blocks, explicit=explicit, ratio=ratio)
        rule = self._cache.estimate(exchange.session, blocks, explicit=explicit, ratio=ratio)
        cached, basis = self._evidence.follow(
            exchange.upstream, request.model, rule, explicit=explicit
        )
        verdict = ""
        if reported:
            verdict = cache_verdict(
                counts[main][0],
                sent=sent_blocks,
                before=sent_before,
                client=blocks,
                client_before=client_before,
                now=now,
                explicit=explicit,
                boundary=self._boundary(exchange),
            )
        return cached, basis, verdict

    def _relayed_verdict(self, exchange: Exchange, count: tuple[Usage, bool], now: float) -> str:
        """The cache verdict on a request relayed as bytes (the client's own: no ``gateway-*``
        or ``boundary`` verdict can be), against the session's request before it: the causes
        told without decoding first (``hit``, ``first``, ``expired``, ``unmarked``, and
        ``short`` or ``provider`` where the bytes show the client only appended,
        ``relayed.holds_all``), and only for a miss they do not explain, the two requests
        decoded (a client that changed what it sent before)."""
        usage, estimated = count
        if estimated:
            return ""
        if usage.cached_input > 0:
            return "hit"
        assert exchange.relayed is not None
        session, body = exchange.session, exchange.relayed.body
        kept = self._deferred.get(session)
        known = self._cache.previous(session) if kept is None else None
        at = kept[-1] if kept is not None else known[1] if known is not None else None
        explicit = exchange.upstream_wire is Wire.MESSAGES
        if at is None:
            return "first"
        if now - at > (TTL[None] if explicit else AUTOMATIC_TTL):
            return "expired"
        if explicit and b'"cache_control"' not in body:
            return "unmarked"
        wire = exchange.client_wire
        if kept is not None and kept[1] is wire and holds_all(kept[0], body, wire):
            return "short" if kept[4][0].input < AUTOMATIC_MIN else "provider"  # all of it kept
        request = decoded_request(exchange.client_wire, body)
        if request is None:
            return ""
        before = known
        if kept is not None:
            older = decoded_request(kept[1], kept[0])
            before = (blocks_of(older, _SENT).chain, at) if older is not None else None
        blocks = blocks_of(request, _SENT)
        return cache_verdict(
            usage,
            sent=blocks,
            before=before,
            client=blocks,
            client_before=before,
            now=now,
            explicit=explicit,
            boundary=False,
        )

    def _boundary(self, exchange: Exchange) -> bool:
        """Whether ``exchange`` started an epoch (its lanes name one past the session's)."""
        epoch = epoch_of(exchange.lanes)
        return epoch is not None and epoch > self._epochs.get(exchange.session, 0)

    def _learn(
        self,
        exchange: Exchange,
        counts: list[tuple[Usage, bool]],
        main: int,
        sent: Blocks,
        *,
        explicit: bool,
        ratio: float,
    ) -> None:
        """What the provider's cache did with the requests the gateway sent, as evidence for
        the upstream and model: the round that sent ``sent`` against what the wire's rule
        predicts for it, the other rounds' reported cache tokens as they are."""
        key = f"{exchange.upstream}\x00{exchange.session}"
        predicted = self._sent.estimate(key, sent, explicit=explicit, ratio=ratio)
        model = exchange.model
        for number, (usage, estimated) in enumerate(counts):
            if estimated or not exchange.metered:
                continue  # the gateway's own count, or no reply: no word from the provider
            expected = predicted if number == main else None
            self._evidence.observe(exchange.upstream, model, usage, expected)

    def _catch_up(self, session: str) -> None:
        """The session's caches as a pass-through's would be after its last request relayed as
        bytes (decoded now, when a request of the session is estimated against it), at the
        time it was recorded."""
        kept = self._deferred.pop(session)
        if kept is None:
            return
        body, client_wire, upstream, upstream_wire, (usage, estimated), at = kept
        request = decoded_request(client_wire, body)
        if request is None:
            return
        blocks = blocks_of(request, _SENT)
        ratio = 1.0 if estimated else calibration(usage.input, blocks.total)
        explicit = upstream_wire is Wire.MESSAGES
        self._cache.estimate(session, blocks, explicit=explicit, ratio=ratio, at=at)
        key = f"{upstream}\x00{session}"
        self._sent.estimate(key, blocks, explicit=explicit, ratio=ratio, at=at)

    def _count_collapse(self, exchange: Exchange) -> None:
        found = _EPOCH.search(exchange.lanes)
        if found is None:
            return
        epoch = int(found.group(1))
        before = self._epochs.get(exchange.session, 0)
        if epoch > before:
            self.metrics.collapses.inc(epoch - before)
        self._epochs[exchange.session] = epoch
        self._epochs.move_to_end(exchange.session)
        while len(self._epochs) > 4096:
            self._epochs.popitem(last=False)


def epoch_of(lanes: str) -> int | None:
    """The epoch the state lane's summary in ``lanes`` names (None: it names none)."""
    found = _EPOCH.search(lanes)
    return int(found.group(1)) if found is not None else None


def _told(usage: Usage, unreported: bool, verdict: str | None) -> str:
    """A row's cache verdict: ``unreported`` where the provider reported no usage (a reply
    without counts, a call that failed); the client's round's ``verdict``; on the gateway's own
    rounds (``verdict`` None: a continuation after its tool, a handover), which repeat a request
    sent moments before and add to it, ``hit``, else ``short`` below the provider's minimum,
    else ``provider``."""
    if unreported:
        return "unreported"
    if verdict:
        return verdict
    if usage.cached_input:
        return "hit"
    if verdict is not None:
        return ""
    return "short" if usage.input < AUTOMATIC_MIN else "provider"


def _cause(causes: list[str], number: int) -> str:
    """Why round ``number`` was sent (``""``: the client's request itself)."""
    return causes[number] if number < len(causes) else ""


def _main_round(causes: list[str]) -> int:
    """The round that sent the client's request itself (after a handover round, not the
    first)."""
    return causes.index("") if "" in causes else 0
