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
import contextlib
import dataclasses
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from skillstate.conversation import (
    ErrorKind,
    Event,
    Json,
    ProtocolError,
    Request,
    Response,
    Wire,
)
from skillstate.economics.exchange import Exchange
from skillstate.economics.metered import Metered, meter
from skillstate.protocols import adapter
from skillstate.protocols.headers import response_headers, upstream_headers
from skillstate.protocols.streams import EventReader
from skillstate.server.client_stream import ClientGone
from skillstate.server.context import GatewayContext
from skillstate.server.exchanges import notify
from skillstate.server.timing import TIMING
from skillstate.support import jsonio
from skillstate.upstream.circuit import Outcome, State
from skillstate.upstream.retry import RETRYABLE, RetryPolicy, retry_after
from skillstate.upstream.routing import Upstream

log = logging.getLogger("skillstate.forward")

BYTES_PER_TOKEN = 4
"""How rate limits estimate a body's prompt tokens: cheap, and the same on every wire."""


class UpstreamFailure(Exception):
    """The upstream did not give a usable reply. ``status`` and ``kind`` are what the client
    is told; ``body`` is the upstream's own error body (relayed as it came on the same wire);
    ``headers`` are the upstream's response headers fit for the client.

    ``retryable``: what a provider means as "try again" (``upstream.retry``): its statuses,
    a connection that failed, a timeout before the first byte. A failure found while reading a
    reply before any byte of it reached the client (a body cut short: ``Outbound.settle``) is
    marked retryable by whoever finds it, and ``Forward`` tries the call again like a 502."""

    def __init__(
        self,
        status: int,
        kind: ErrorKind,
        message: str,
        *,
        wire: Wire,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        local: bool = False,
        retryable: bool | None = None,
        retry_after_s: float | None = None,
        cut_short: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.wire = wire
        self.headers = headers or {}
        self.body = body
        self.content_type = content_type
        self.local = local
        """Made by the gateway itself (its rate limit): no fallback, no retry."""
        self.retryable = status in RETRYABLE if retryable is None else retryable
        self.retry_after_s = retry_after_s
        """The wait the provider asked for (``Retry-After``), in seconds, if it asked one."""
        self.cut_short = cut_short
        """The reply ended before its wire said it was whole (``reply_cut_short``): a
        failure of the upstream's, retryable while no byte reached the client."""

    @property
    def outcome(self) -> Outcome:
        """What this failure says of the upstream, for its circuit: a 429 is pacing, an answer
        below 500 shows it up, anything else is a failure."""
        if self.status == 429 or self.local:
            return Outcome.PACED
        if self.status < 500 and not self.retryable:
            return Outcome.OK
        return Outcome.FAILED


@dataclass(frozen=True, slots=True)
class Outbound:
    """One upstream call: ``path`` on the upstream in its ``wire``; ``body`` None is a GET."""

    path: str
    body: bytes | None
    query: str = ""
    timeout: float | None = None
    probe: bool = False
    """A health probe: tried once, outside the circuit breaker (it neither waits for it nor
    moves it, so /health reports the circuit as the requests left it)."""
    optional: bool = False
    """A round the turn can do without (the handover): tried once, outside the circuit
    breaker, never on a fallback, so its failure costs the client's own round nothing."""
    render: Callable[[Wire], tuple[str, bytes]] | None = None
    """The call for an upstream of another wire (path, body), so a fallback of that wire can
    serve it; None: only fallbacks of the same wire can."""
    settle: Callable[[Reply], Awaitable[None]] | None = None
    """Read (part of) the reply before ``send`` yields it, while nothing of it reached the
    client: an ``UpstreamFailure`` it raises that is ``retryable`` (a body cut short) is tried
    again like any failure before the reply (``read_whole``)."""


@dataclass(slots=True)
class Reply:
    """An upstream reply with a usable status; read it once, in one of three ways."""

    status: int
    wire: Wire
    headers: dict[str, str]
    upstream: str
    raw: aiohttp.ClientResponse
    first_byte: Callable[[], None] | None = None
    """Told once, when the first chunk came (``Forward`` times it)."""
    failure: UpstreamFailure | None = None
    """How reading the reply failed, once it did (a stream broken or cut short): its circuit
    is told the call failed."""
    _head: bytes | None = None
    """The stream's first chunk, read by ``peek`` and given first by ``chunks``."""

    @property
    def streamed(self) -> bool:
        return "text/event-stream" in self.raw.headers.get("content-type", "")

    async def read(self) -> bytes:
        try:
            return await self.raw.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._broke(_failure(exc, self.upstream, self.wire)) from exc

    async def peek(self) -> None:
        """Wait for a stream's first chunk (kept for ``chunks``), while nothing of the reply
        reached the client: a stream that breaks, stalls or ends before any byte is the
        upstream's retryable failure, tried again like a 502."""
        try:
            head = await self.raw.content.readany()
        except (aiohttp.ClientError, TimeoutError) as exc:
            failure = _failure(exc, self.upstream, self.wire)
            failure.retryable = True
            raise failure from exc
        if not head:
            raise reply_cut_short(self, "the stream ended before its first byte")
        self._head = head
        if self.first_byte is not None:
            self.first_byte()
            self.first_byte = None

    async def json(self) -> Json:
        raw = await self.read()
        try:
            body = jsonio.loads(raw)
        except ValueError as exc:  # a body that does not parse whole was cut short
            raise reply_cut_short(self, f"the JSON body does not parse whole: {exc}") from exc
        if not isinstance(body, dict):
            raise reply_cut_short(self, "the JSON body is not an object")
        return body

    async def response(self) -> Response:
        """The reply decoded into the canonical model."""
        body = await self.json()
        try:
            return adapter(self.wire).decode_response(body)
        except (ProtocolError, ValueError, TypeError, KeyError) as exc:
            raise reply_cut_short(self, f"not a whole reply of its wire: {exc}") from exc

    async def chunks(self) -> AsyncIterator[bytes]:
        if self._head is not None:
            head, self._head = self._head, None
            yield head
        try:
            async for chunk in self.raw.content.iter_any():
                if self.first_byte is not None:
                    self.first_byte()
                    self.first_byte = None
                yield chunk
        except aiohttp.ClientPayloadError as exc:
            message = f"upstream {self.upstream!r} stream broke: {exc}"
            failure = UpstreamFailure(502, ErrorKind.UPSTREAM, message, wire=self.wire)
            raise self._broke(failure) from exc
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._broke(_failure(exc, self.upstream, self.wire)) from exc

    def _broke(self, failure: UpstreamFailure) -> UpstreamFailure:
        if self.failure is None:
            self.failure = failure
        return failure

    async def events(self) -> AsyncIterator[list[Event]]:
        """The stream as canonical events, a batch per chunk that completed some. A stream
        that ends before its wire says it is whole (``EventReader``) raises
        ``reply_cut_short`` at its end instead of yielding a last batch."""
        reader = EventReader(self.wire)
        try:
            async for chunk in self.chunks():
                batch = reader.feed(chunk)
                if batch:
                    yield batch
            tail = reader.close()
        except (ProtocolError, ValueError, KeyError, TypeError) as exc:
            raise unreadable(self, f"stream: {exc}") from exc
        if reader.cut:
            raise reply_cut_short(self, "the stream ended before its terminal event")
        if tail:
            yield tail


def unreadable(reply: Reply, why: str) -> UpstreamFailure:
    message = f"upstream {reply.upstream!r} sent a reply the gateway cannot read ({why})"
    log.warning(message)
    failure = UpstreamFailure(
        502, ErrorKind.UPSTREAM, message, wire=reply.wire, headers=reply.headers
    )
    return reply._broke(failure)


async def read_whole(reply: Reply) -> None:
    """``Outbound.settle`` for a JSON reply: its body read whole before it is yielded (a body
    cut short is a retryable 502; ``Reply.read`` then answers from what was read)."""
    if not reply.streamed:
        await reply.read()


def reply_cut_short(reply: Reply, why: str) -> UpstreamFailure:
    """A reply the upstream ended before its wire said it was whole: a 502 of the upstream's
    with ``cut_short`` set, so a retry policy can try again while no byte reached the client.
    After the first byte the route ends the stream with the client wire's error event."""
    message = f"upstream {reply.upstream!r} reply cut short ({why})"
    log.warning(message)
    failure = UpstreamFailure(
        502, ErrorKind.UPSTREAM, message, wire=reply.wire, headers=reply.headers, cut_short=True
    )
    return reply._broke(failure)


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
    _started: float | None = None
    """When the request's first try began: the retry deadline counts from it."""
    _ended: bool = False
    _reported: bool = False

    @contextlib.asynccontextmanager
    async def send(self, outbound: Outbound) -> AsyncIterator[Reply]:
        """Call the upstream; the reply when its status is below 400, else ``UpstreamFailure``
        (raised before the body is yielded to anyone). Failures a provider means as "try
        again" are retried first (``upstream.retry``), behind the upstream's circuit breaker;
        never once the reply was yielded, since its bytes may be on their way."""
        timing = self.http.get(TIMING)
        if timing is not None:
            timing.enter(time.perf_counter())
        try:
            reply = await self._with_fallbacks(outbound)
            outcome = Outcome.PACED  # ended without a verdict (the client gone): none
            try:
                yield reply
                outcome = Outcome.OK
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise reply._broke(_failure(exc, self.upstream.name, self.wire)) from exc
            finally:
                reply.raw.release()
                if not (outbound.probe or outbound.optional):
                    if reply.failure is not None:
                        outcome = Outcome.FAILED
                    circuit = self.gateway.circuit(reply.upstream)
                    circuit.tried(outcome)
                    circuit.record(outcome)
        finally:
            if timing is not None:
                timing.leave(time.perf_counter())

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
        path, body = outbound.render(wire) if outbound.render else (outbound.path, outbound.body)
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
                    reply = await self._try(outbound)
                except UpstreamFailure as failure:
                    outcome = failure.outcome
                    if not alone:
                        circuit.tried(outcome)
                    delay = None
                    if failure.retryable and not failure.local and not self._elsewhere(outbound):
                        spent = time.monotonic() - started
                        delay = policy.delay(attempt, asked_s=failure.retry_after_s, spent_s=spent)
                    if delay is None:
                        raise
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

    def _elsewhere(self, outbound: Outbound) -> bool:
        """Whether this upstream's circuit now sends calls to a healthy fallback, and this
        call has one."""
        if outbound.probe or outbound.optional:
            return False
        if not self.gateway.circuit(self.upstream.name).passes_over:
            return False
        return self._next(outbound, healthy=True, take=False) is not None

    async def _try(self, outbound: Outbound) -> Reply:
        """One try: the reply (settled), or ``UpstreamFailure``."""
        try:
            raw = await self._call(outbound)
        except (aiohttp.ClientError, TimeoutError) as exc:
            self._note_attempt(0)
            raise _failure(exc, self.upstream.name, self.wire) from exc
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
            raw.release()
            self._note_attempt(exc.status if isinstance(exc, UpstreamFailure) else raw.status)
            raise
        self._note_attempt(raw.status)
        return reply

    async def _admit(self, outbound: Outbound) -> None:
        """Wait for the upstream's rate limit, or refuse with a 429 of the gateway's own."""
        limit = None if outbound.probe else self.gateway.limit(self.upstream)
        if limit is None:
            return
        tokens = len(outbound.body or b"") // BYTES_PER_TOKEN
        admission = limit.admit(tokens)
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

    async def _call(self, outbound: Outbound) -> aiohttp.ClientResponse:
        url = self.upstream.url(outbound.path)
        if outbound.query and self.wire is self.client_wire:
            url += "?" + outbound.query
        headers = upstream_headers(
            self.http.headers if self.client_headers is None else self.client_headers,
            client_wire=self.client_wire,
            upstream_wire=self.wire,
            api_key=self.upstream.api_key,
            extra=self.upstream.headers,
        )
        client = self.gateway.client
        if outbound.body is None:
            headers.pop("content-type", None)
            return await client.get(url, headers, timeout=outbound.timeout)
        async with asyncio.timeout(self.gateway.first_byte_timeout):
            return await client.post(url, outbound.body, headers)

    async def _wait(self, delay: float, why: str) -> None:
        log.info("upstream %r: %s; trying again in %.2fs", self.upstream.name, why, delay)
        await asyncio.sleep(delay)

    def _note_attempt(self, status: int) -> None:
        if self.exchange is not None:
            self.exchange.attempts.append(status)
            self.exchange.status = status

    def _reply(self, raw: aiohttp.ClientResponse, relayed: dict[str, str]) -> Reply:
        """``relayed``: the reply's headers fit for the client (``response_headers``)."""
        if not self.relayed:
            self.relayed = relayed
        first_byte = self._first_byte if self.exchange is not None else None
        return Reply(raw.status, self.wire, relayed, self.upstream.name, raw, first_byte)

    async def _refusal(
        self, raw: aiohttp.ClientResponse, relayed: dict[str, str]
    ) -> UpstreamFailure:
        try:
            body = await raw.read()
        finally:
            raw.release()
        parsed = _json_or_none(body)
        kind, message = adapter(self.wire).decode_error(raw.status, parsed)
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

    @contextlib.asynccontextmanager
    async def recording(self) -> AsyncIterator[None]:
        """Serve the client request inside this: its ``Exchange`` goes to the observers once,
        from the ``finally`` below, whichever way the request ends. The way it ended is what
        ``answered`` or ``failed`` said, first word kept; a request that ended without either
        ended with the client gone (499) or the gateway's own error (500)."""
        try:
            yield
        except (ClientGone, asyncio.CancelledError):
            self.failed(CLIENT_GONE, "the client went away before its reply was complete")
            raise
        except Exception as exc:
            self.failed(500, f"internal gateway error ({type(exc).__name__})")
            raise
        finally:
            self._finish()

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
        if response is not None and not exchange.metered:  # one reply, relayed as it came
            sent = exchange.sent or exchange.request
            exchange.metered.append(meter(response.usage, sent, response.message))
        timing = self.http.get(TIMING)
        if timing is not None:
            exchange.upstream_s = timing.upstream(now)
            exchange.overhead_s = timing.overhead(now)

    def failed(self, status: int, message: str) -> None:
        """The client was told ``status`` (or nothing, when it went away): no reply to record."""
        self.answered(status, None, message)

    def track(self, metered: list[Metered], causes: list[str]) -> None:
        """The round loop's lists, filled as its rounds come: each round's reply as the
        ledger counts it and why each round after the first was made."""
        if self.exchange is not None:
            self.exchange.metered, self.exchange.causes = metered, causes

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


ONCE = RetryPolicy(attempts=1)
"""A call tried once: a health probe, a round the turn can do without."""

CLIENT_GONE = 499
"""The status an exchange whose client went away records (no reply was sent: nginx's
"client closed request")."""


def _failure(exc: BaseException, name: str, wire: Wire) -> UpstreamFailure:
    if isinstance(exc, UpstreamFailure):
        return exc
    if isinstance(exc, TimeoutError):
        message = f"upstream {name!r} did not answer in time"
        return UpstreamFailure(504, ErrorKind.TIMEOUT, message, wire=wire, retryable=True)
    if isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ServerDisconnectedError):
        message = f"upstream {name!r} is unreachable: {exc}"
    else:
        message = f"upstream {name!r} failed: {type(exc).__name__}: {exc}"
    log.warning(message)
    return UpstreamFailure(502, ErrorKind.UPSTREAM, message, wire=wire, retryable=True)


def _json_or_none(raw: bytes) -> Json | None:
    try:
        parsed = jsonio.loads(raw) if raw else None
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None
