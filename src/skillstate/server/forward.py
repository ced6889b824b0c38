"""The one way the gateway talks to an upstream: ``Forward.send(outbound)``.

It owns everything every upstream call needs, written once: the URL and query string, the
outbound headers (credentials per wire), the call itself, the mapping of failures (an
unreachable upstream is 502, a timeout 504, an upstream 4xx/5xx keeps its status, kind,
message and headers), the provider's response headers for the client (request ids, rate
limits, ``retry-after``, translated to the client wire's names), the reply as bytes, chunks or
canonical events, and the ``Exchange`` record its observers get once per client request.

Every failure comes out as ``UpstreamFailure``, before the reply (``send``) or while reading it
(``Reply.read/chunks/events``), so a route has one thing to catch and one place to decide how
to tell the client: an error response before the first byte, the client wire's own error event
after it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from skillstate.conversation import (
    ErrorKind,
    Json,
    Profile,
    Request,
    Response,
    Wire,
)
from skillstate.economics.allowance import estimated_input
from skillstate.economics.exchange import Exchange
from skillstate.economics.metered import Metered, meter
from skillstate.protocols import adapter
from skillstate.protocols.diagnosis import one_token_json_form
from skillstate.protocols.headers import response_headers, upstream_headers
from skillstate.protocols.logins import Login
from skillstate.protocols.profiles import refused_as_invalid
from skillstate.server import budgets
from skillstate.server.client_stream import ClientGone
from skillstate.server.context import GatewayContext
from skillstate.server.exchanges import notify
from skillstate.server.outbound import Outbound
from skillstate.server.replies import (
    Reply,
    UpstreamFailure,
    failure_of,
    invalid_refusal,
    not_retried,
    streamed_reply,
)
from skillstate.server.tenancy import provider_key
from skillstate.server.timing import TIMING, Timing
from skillstate.support import jsonio
from skillstate.upstream.circuit import Outcome, State
from skillstate.upstream.limits import RateLimit
from skillstate.upstream.retry import RetryPolicy, retry_after
from skillstate.upstream.routing import Upstream

log = logging.getLogger("skillstate.forward")


@dataclass(slots=True)
class Forward:
    """Every upstream call made for one client request, and its ``Exchange``."""

    gateway: GatewayContext
    http: web.Request
    upstream: Upstream
    client_wire: Wire
    wire: Wire
    exchange: Exchange | None = None
    client_headers: Mapping[str, str] | None = None
    """The headers to build the outbound ones from; None: the client request's own."""
    relayed: dict[str, str] = field(default_factory=dict)
    fallbacks: list[Upstream] = field(default_factory=list)
    """Upstreams still to try, in order, when this one is down (circuit open, retries spent)."""
    login: Login = Login.NONE
    """The client's login (``protocols.logins``): a subscription's token goes upstream as it
    came, never replaced by a key the gateway holds (that key is for requests without a
    login of their own)."""
    charge: budgets.Charge | None = None
    """What the request's calls hold of its key's budget (``server.budgets``)."""
    _started: float | None = None
    """When the request's first try began: the retry deadline counts from it."""
    _ended: bool = False
    _reported: bool = False

    def send(self, outbound: Outbound) -> Call:
        """Call the upstream; the reply when its status is below 400, else ``UpstreamFailure``
        (raised before the body is yielded to anyone). Failures a provider means as "try
        again" are retried first (``upstream.retry``), behind the upstream's circuit breaker;
        never once the reply was yielded, since its bytes may be on their way."""
        return Call(self, outbound)

    async def _with_fallbacks(self, outbound: Outbound) -> Reply:
        """The reply of this upstream or, when it is down, of a fallback: one whose circuit is
        open is passed over for a healthy fallback (never for none: ``upstream.circuit``);
        one whose tries are spent on a failure that is not the provider's answer to the
        request itself gives way to the next fallback."""
        if self._started is None:
            self._started = time.monotonic()
        started = self._started
        alone = outbound.probe or outbound.optional
        while True:
            if not alone and not self._circuit_allows(outbound):
                outbound = self._switch(outbound, self._next(outbound, healthy=True), None)
                continue
            try:
                return await self._attempts(outbound, started)
            except UpstreamFailure as failure:
                if failure.local or failure.outcome is Outcome.OK or alone:
                    raise  # the provider answered (or our own limit did): nothing to route
                switched = self._next(outbound, healthy=False)
                if switched is None:
                    raise
                outbound = self._switch(outbound, switched, failure)

    def _circuit_allows(self, outbound: Outbound) -> bool:
        circuit = self.gateway.circuit(self.upstream.name)
        if circuit.state is State.CLOSED and not circuit.degraded:
            return True  # the common case: no fallback is looked at
        return circuit.allows(self._next(outbound, healthy=True, take=False) is not None)

    def _next(self, outbound: Outbound, *, healthy: bool, take: bool = True) -> Upstream | None:
        """The next fallback that can serve ``outbound`` (of this wire, or any when it can be
        rendered for another): the first whose circuit would take it, else (unless
        ``healthy``) the first at all; ``take``: no longer a fallback for this request."""
        usable = [
            candidate
            for candidate in self.fallbacks
            if outbound.render is not None or candidate.wire_for(self.client_wire) is self.wire
        ]
        chosen = next((c for c in usable if self.gateway.circuit(c.name).healthy), None)
        if chosen is None and not healthy and usable:
            chosen = usable[0]
        if chosen is not None and take:
            self.fallbacks.remove(chosen)
        return chosen

    def _switch(
        self, outbound: Outbound, candidate: Upstream | None, failure: UpstreamFailure | None
    ) -> Outbound:
        """The call for ``candidate`` (this Forward then speaks to it for the rest of the
        request)."""
        if candidate is None:  # _circuit_allows saw a healthy fallback: there is one
            raise RuntimeError("no fallback to switch to")
        wire = candidate.wire_for(self.client_wire)
        path, body = (outbound.path, outbound.body)
        if outbound.render is not None:
            path, body = outbound.render(wire, candidate.profile)
        status = self.gateway.circuit(self.upstream.name).status
        why = failure.message if failure is not None else f"its circuit is {status}"
        log.warning(
            "upstream %r failed (%s); falling back to %r", self.upstream.name, why, candidate.name
        )
        self._fell_back(candidate, wire, why)
        self.upstream, self.wire = candidate, wire
        return dataclasses.replace(outbound, path=path, body=body)

    async def _attempts(self, outbound: Outbound, started: float) -> Reply:
        """This upstream's tries. Its circuit is told their outcome once, as one call's: here
        when they all failed, by ``send`` when the reply that came has been read. A try that
        failed while a healthy fallback became the better place (``Circuit.passes_over``)
        ends the tries here: the call goes on there."""
        alone = outbound.probe or outbound.optional
        policy = ONCE if alone else self.gateway.retry
        circuit = self.gateway.circuit(self.upstream.name)
        outcome = Outcome.PACED
        try:
            await self._admit(outbound)
            attempt = 0
            while True:
                attempt += 1
                try:
                    reply = await self._try(outbound, self._first_byte_s(policy, attempt, started))
                except UpstreamFailure as caught:
                    failure = caught
                    if failure.empty and attempt == 1:  # the server's own word, if it has one
                        failure = await self._why_empty(outbound) or failure
                    outcome = failure.outcome
                    if not alone:
                        circuit.tried(outcome)
                    delay = None
                    if failure.retryable and not failure.local and not self._elsewhere(outbound):
                        spent = time.monotonic() - started
                        delay = policy.delay(attempt, asked_s=failure.retry_after_s, spent_s=spent)
                    if delay is None:
                        if failure is caught:
                            raise
                        raise failure from caught
                    await self._wait(delay, f"HTTP {failure.status}: {failure.message}")
                    continue
                outcome = Outcome.OK
                return reply
        except asyncio.CancelledError:
            outcome = Outcome.PACED  # abandoned: no verdict on the upstream
            raise
        finally:
            if not alone and outcome is not Outcome.OK:
                circuit.record(outcome)

    async def _why_empty(self, outbound: Outbound) -> UpstreamFailure | None:
        """A streamed call came back as an empty stream (a llama.cpp server does so for a prompt
        over its context): the same call once as JSON, whose refusal (a 400 naming the context
        length) is the client's answer; None when it has none to give (it answers, or fails
        itself), and the empty stream is tried again as any cut reply. It asks for one token:
        a server that can answer it does no more work than that. Never of the ChatGPT
        backend, which refuses a request that is not streamed or sets an output limit."""
        if self.upstream.profile is Profile.CHATGPT:
            return None
        form = one_token_json_form(outbound.body, self.wire)
        if form is None:
            return None
        call = dataclasses.replace(outbound, body=form)
        for _ in range(STALE_TRIES):
            try:
                raw = await self._call(call, self.gateway.first_byte_timeout)
                break
            except TimeoutError:  # aiohttp's read timeout is a connection error too
                return None
            except aiohttp.ClientConnectionError:  # a pooled connection the server had closed
                continue  # (it closes the empty stream's after the pool took it back)
            except aiohttp.ClientError:
                return None
        else:
            return None
        self._note_attempt(raw.status)
        if raw.status < 400:
            raw.close()  # its answer is not read: the connection is not fit to be reused
            return None
        relayed = response_headers(
            raw.headers, upstream_wire=self.wire, client_wire=self.client_wire
        )
        return await self._refusal(raw, relayed)

    def _elsewhere(self, outbound: Outbound) -> bool:
        """Whether this upstream's circuit now sends calls to a healthy fallback, and this
        call has one."""
        if outbound.probe or outbound.optional:
            return False
        if not self.gateway.circuit(self.upstream.name).passes_over:
            return False
        return self._next(outbound, healthy=True, take=False) is not None

    def _first_byte_s(self, policy: RetryPolicy, attempt: int, started: float) -> float:
        """How long a try waits for its first byte: ``first_byte_timeout``, and a retry no
        longer than the request's retry deadline, so that the deadline bounds the tries."""
        limit = self.gateway.first_byte_timeout
        if attempt == 1:
            return limit
        return max(0.0, min(limit, policy.deadline_s - (time.monotonic() - started)))

    async def _try(self, outbound: Outbound, first_byte_s: float) -> Reply:
        """One try: the reply (settled), or ``UpstreamFailure``. A try given up before its
        first byte has its connection closed (aiohttp closes it when the wait is cancelled),
        so the upstream sees its client gone before any retry is sent."""
        try:
            raw = await self._call(outbound, first_byte_s)
        except (aiohttp.ClientError, TimeoutError) as exc:
            self._note_attempt(0)
            if _left_running(outbound, exc) and not self.upstream.retry_first_byte_timeout:
                raise not_retried(self.upstream.name, self.wire) from exc
            raise failure_of(exc, self.upstream.name, self.wire) from exc
        relayed = response_headers(
            raw.headers, upstream_wire=self.wire, client_wire=self.client_wire
        )
        if raw.status >= 400:
            self._note_attempt(raw.status)
            raise await self._refusal(raw, relayed)
        reply = self._reply(raw, relayed)
        try:
            if outbound.settle is not None:
                await outbound.settle(reply)
            if reply.streamed:
                await reply.peek()
        except BaseException as exc:
            raw.close()  # a reply judged broken leaves no connection behind for the next call
            self._note_attempt(exc.status if isinstance(exc, UpstreamFailure) else raw.status)
            raise
        self._note_attempt(raw.status)
        return reply

    async def _admit(self, outbound: Outbound) -> None:
        """Wait for the upstream's rate limit, or refuse with a 429 of the gateway's own."""
        limit = None if outbound.probe else self.gateway.limit(self.upstream)
        if limit is None:
            return
        counted = self.upstream.tpm is not None
        tokens = estimated_input(outbound.body) if counted and outbound.body else 0
        if isinstance(limit, RateLimit):
            admission = limit.admit(tokens)
        else:  # shared: Redis or SQLite
            admission = await limit.admit(tokens)
        if admission.wait_s is None:
            if admission.retry_after_s:
                why = f"its rate limit would hold this request {admission.retry_after_s:.0f}s"
            else:
                why = f"this request's ~{tokens:,} tokens alone are over its limit per minute"
            message = f"upstream {self.upstream.name!r}: {why}"
            wait = max(1, math.ceil(admission.retry_after_s))
            headers = {"retry-after": str(wait)} if admission.retry_after_s else {}
            raise UpstreamFailure(
                429, ErrorKind.RATE_LIMIT, message, wire=self.wire, headers=headers, local=True
            )
        if admission.wait_s > 0:
            await self._wait(admission.wait_s, "rate limit")

    async def _call(self, outbound: Outbound, first_byte_s: float) -> aiohttp.ClientResponse:
        url = self.upstream.url(outbound.path)
        if outbound.query and self.wire is self.client_wire:
            url += "?" + outbound.query
        headers = upstream_headers(
            self.http.headers if self.client_headers is None else self.client_headers,
            client_wire=self.client_wire,
            upstream_wire=self.wire,
            api_key=None
            if self.login.subscription
            else (self._provider_key() if self.gateway.tenant_keys else self.upstream.api_key),
            extra=self.upstream.headers,
        )
        if self.exchange is not None and self.exchange.trace is not None:
            self.exchange.trace.send(headers, self.upstream.name)
        client = self.gateway.client
        if outbound.body is None:
            headers.pop("content-type", None)
            return await client.get(url, headers, timeout=outbound.timeout)
        return await client.post(url, outbound.body, headers, first_byte_s)

    def _provider_key(self) -> str | None:
        """The tenant's own key for this upstream, else the gateway's (None: the client's)."""
        key = provider_key(self.http, self.gateway, self.upstream.name)
        return key or self.upstream.api_key

    async def _wait(self, delay: float, why: str) -> None:
        log.info("upstream %r: %s; trying again in %.2fs", self.upstream.name, why, delay)
        await asyncio.sleep(delay)

    def _note_attempt(self, status: int) -> None:
        if self.exchange is not None:
            self.exchange.attempts.append(status)
            self.exchange.status = status
            if self.exchange.trace is not None:
                self.exchange.trace.attempted(status)

    def _reply(self, raw: aiohttp.ClientResponse, relayed: dict[str, str]) -> Reply:
        """``relayed``: the reply's headers fit for the client (``response_headers``)."""
        if not self.relayed:
            self.relayed = relayed
        first_byte = self._first_byte if self.exchange is not None else None
        upstream = self.upstream.name
        return Reply(
            raw.status, self.wire, relayed, upstream, raw, first_byte, streamed=streamed_reply(raw)
        )

    async def _refusal(
        self, raw: aiohttp.ClientResponse, relayed: dict[str, str]
    ) -> UpstreamFailure:
        try:
            body = await raw.read()
        finally:
            raw.release()
        parsed = _json_or_none(body)
        kind, message = adapter(self.wire).decode_error(raw.status, parsed)
        if self.upstream.profile is Profile.COMPATIBLE and refused_as_invalid(raw.status, parsed):
            return invalid_refusal(self.upstream.name, raw.status, message, self.wire, relayed)
        return UpstreamFailure(
            raw.status,
            kind,
            message,
            wire=self.wire,
            headers=relayed,
            body=body,
            content_type=raw.content_type,
            retry_after_s=retry_after(raw.headers, time.time()),
        )

    # --- the Exchange: written here only, finished once ------------------------------------

    def recording(self) -> Recording:
        """Serve the client request inside this: its ``Exchange`` goes to the observers once,
        whichever way the request ends. The way it ended is what ``answered`` or ``failed``
        said, first word kept; a request that ended without either ended with the client gone
        (499) or the gateway's own error (500)."""
        return Recording(self)

    def answered(
        self,
        status: int,
        response: Response | None,
        note: str | None = None,
        *,
        rounds: int | None = None,
    ) -> None:
        """The client has (or is getting the rest of) its reply: ``response`` as it saw it,
        after ``rounds`` upstream requests (None: one). Timed now; the first word on how the
        request ended is kept."""
        exchange = self.exchange
        if exchange is None or self._ended:
            return
        self._ended = True
        exchange.status, exchange.response = status, response
        if rounds is not None:
            exchange.rounds = rounds
        if note is not None:
            exchange.note = note
        now = time.perf_counter()
        exchange.elapsed_s = now - exchange.started
        sent = exchange.sent or exchange.request
        if response is not None and sent is not None and not exchange.metered:
            # One reply, relayed as it came (one relayed as bytes is metered by the recorder).
            exchange.metered.append(meter(response.usage, sent, response.message))
        timing = self.http.get(TIMING)
        if timing is not None:
            exchange.upstream_s = timing.upstream(now)
            exchange.overhead_s = timing.overhead(now)

    def failed(self, status: int, message: str) -> None:
        """The client was told ``status`` (or nothing, when it went away): no reply to record."""
        self.answered(status, None, message)

    def track(
        self, metered: list[Metered], causes: list[str], tools: dict[int, tuple[str, ...]]
    ) -> None:
        """The round loop's records, filled as its rounds come: each round's reply as the
        ledger counts it, why each round after the first was made, what it answered."""
        if self.exchange is not None:
            exchange = self.exchange
            exchange.metered, exchange.causes, exchange.round_tools = metered, causes, tools

    def handed_over(self, sent: Request) -> None:
        """The hidden handover round is behind: what the exchange says was sent, when its
        first byte came and which headers the client gets are the client's own round's."""
        if self.exchange is not None:
            self.exchange.sent, self.exchange.first_byte_s = sent, None
        self.relayed = {}

    def _first_byte(self) -> None:
        exchange = self.exchange
        if exchange is not None and exchange.first_byte_s is None:
            exchange.first_byte_s = time.perf_counter() - exchange.started

    def _fell_back(self, candidate: Upstream, wire: Wire, why: str) -> None:
        if self.exchange is not None:
            self.exchange.note = f"fell back from {self.upstream.name!r}: {why}"
            self.exchange.upstream, self.exchange.upstream_wire = candidate.name, wire

    def _finish(self) -> None:
        if self.exchange is not None and not self._reported:
            self._reported = True
            notify(self.gateway, self.exchange)
            if self.charge is not None:
                budgets.settle(self)


class Call:
    """``Forward.send``'s call, as an async context manager: the reply inside, and on the way
    out its connection released, its circuit told the call's outcome (the client gone without
    a verdict is none; a reply that broke while read, failed) and the upstream's time ended.
    A read of the reply that fails with aiohttp's error leaves as ``UpstreamFailure``."""

    __slots__ = ("_forward", "_hold", "_outbound", "_reply", "_timing")

    def __init__(self, forward: Forward, outbound: Outbound) -> None:
        self._forward = forward
        self._outbound = outbound
        self._reply: Reply | None = None
        self._timing: Timing | None = None
        self._hold: budgets.Hold | None = None

    async def __aenter__(self) -> Reply:
        forward = self._forward
        keys = forward.gateway.keys
        if keys is not None and keys.ever_active and not self._outbound.probe:
            self._hold = await budgets.reserve(forward, self._outbound)
        timing = self._timing = forward.http.get(TIMING)
        if timing is not None:
            timing.enter(time.perf_counter())
        try:
            reply = self._reply = await forward._with_fallbacks(self._outbound)
        except BaseException:
            if timing is not None:
                timing.leave(time.perf_counter())
            if self._hold is not None:
                budgets.release(forward, self._hold)
            raise
        return reply

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: object
    ) -> None:
        forward, reply, outbound = self._forward, self._reply, self._outbound
        assert reply is not None  # entered
        outcome = Outcome.OK if error is None else Outcome.PACED
        broke = None
        if isinstance(error, aiohttp.ClientError | TimeoutError):
            broke = reply._broke(failure_of(error, forward.upstream.name, forward.wire))
        try:
            reply.raw.release()
            if not (outbound.probe or outbound.optional):
                if reply.failure is not None:
                    outcome = Outcome.FAILED
                circuit = forward.gateway.circuit(reply.upstream)
                circuit.tried(outcome)
                circuit.record(outcome)
        finally:
            if self._timing is not None:
                self._timing.leave(time.perf_counter())
            if self._hold is not None and forward.exchange is None:
                budgets.settle(forward)  # nothing counts its usage: it held what it cost
        if broke is not None:
            raise broke from error


class Recording:
    """``Forward.recording``: the request's ``Exchange`` to the observers once, on the way
    out, with how it ended where nothing said so."""

    __slots__ = ("_forward",)

    def __init__(self, forward: Forward) -> None:
        self._forward = forward

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: object
    ) -> None:
        forward = self._forward
        try:
            if isinstance(error, ClientGone | asyncio.CancelledError):
                forward.failed(CLIENT_GONE, CLIENT_LEFT)
            elif isinstance(error, Exception):
                forward.failed(500, f"internal gateway error ({type(error).__name__})")
        finally:
            forward._finish()


STALE_TRIES = 3
"""How many pooled connections a diagnostic call may find closed before it gives up."""

ONCE = RetryPolicy(attempts=1)
"""A call tried once: a health probe, a round the turn can do without."""

CLIENT_GONE = 499
"""The status an exchange whose client went away records (no reply was sent: nginx's
"client closed request")."""
CLIENT_LEFT = "the client went away before its reply was complete"


def _left_running(outbound: Outbound, exc: BaseException) -> bool:
    """Whether a try of ``outbound`` that failed with ``exc`` may still be running upstream:
    a call with a body (a generation) that timed out after it was sent, not while connecting."""
    if outbound.body is None or not isinstance(exc, TimeoutError):
        return False
    return not isinstance(exc, aiohttp.ConnectionTimeoutError)


def _json_or_none(raw: bytes) -> Json | None:
    try:
        parsed = jsonio.loads(raw) if raw else None
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None
