"""An upstream's reply as ``Forward`` hands it over, and the one failure every upstream call
ends in (``UpstreamFailure``): made before the reply (a status, a connection, a timeout) or while
reading it (a stream that broke, a body cut short).

A reply is whole only when its wire says so (``protocols.streams.EventReader``); one that is not
is ``reply_cut_short``, a retryable 502 of the upstream's while no byte reached the client. A
reply's reading failure is kept on it (``Reply.failure``), so its circuit hears that the call
failed even where the route handled it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import aiohttp

from skillstate.conversation import ErrorKind, Event, Json, ProtocolError, Response, Wire
from skillstate.protocols import adapter
from skillstate.protocols.streams import EventReader
from skillstate.support import jsonio
from skillstate.upstream.circuit import Outcome
from skillstate.upstream.retry import RETRYABLE

log = logging.getLogger("skillstate.forward")


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
        self.empty = False
        """A stream that came with not one event (``Reply.peek``)."""

    @property
    def outcome(self) -> Outcome:
        """What this failure says of the upstream, for its circuit: a 429 is pacing, an answer
        below 500 shows it up, anything else is a failure."""
        if self.status == 429 or self.local:
            return Outcome.PACED
        if self.status < 500 and not self.retryable:
            return Outcome.OK
        return Outcome.FAILED


def streamed_reply(raw: aiohttp.ClientResponse) -> bool:
    """Whether ``raw`` is an event stream, by its content type."""
    return "text/event-stream" in raw.headers.get("content-type", "")


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
    streamed: bool = False
    """The reply is an event stream (``streamed_reply``)."""

    async def read(self) -> bytes:
        try:
            return await self.raw.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._broke(failure_of(exc, self.upstream, self.wire)) from exc

    async def peek(self) -> None:
        """Wait for a stream's first chunk (kept for ``chunks``), while nothing of the reply
        reached the client: a stream that breaks, stalls or ends before any byte is the
        upstream's retryable failure, tried again like a 502."""
        try:
            head = await self.raw.content.readany()
        except (aiohttp.ClientError, TimeoutError) as exc:
            failure = failure_of(exc, self.upstream, self.wire)
            failure.retryable = True
            raise failure from exc
        if not head:
            failure = reply_cut_short(self, "the upstream sent an empty stream, not one event")
            failure.empty = True
            raise failure
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
            raise self._broke(failure_of(exc, self.upstream, self.wire)) from exc

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


def failure_of(exc: BaseException, name: str, wire: Wire) -> UpstreamFailure:
    """What a connection's or a timeout's exception means for the client: a retryable 504 for
    a timeout, a retryable 502 for anything else."""
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


def not_retried(name: str, wire: Wire) -> UpstreamFailure:
    """A timeout before the first byte on an upstream that is not tried again after one
    (``Upstream.retry_first_byte_timeout``)."""
    message = (
        f"upstream {name!r} did not answer in time; not tried again, since the request may "
        "still be running there (retry_first_byte_timeout)"
    )
    log.warning(message)
    return UpstreamFailure(504, ErrorKind.TIMEOUT, message, wire=wire, retryable=False)


def invalid_refusal(
    name: str, status: int, message: str, wire: Wire, headers: dict[str, str]
) -> UpstreamFailure:
    """A compatible server's 500 that says the request was invalid (``refused_as_invalid``):
    the request's fault, told as the 400 the official provider sends for it, so it is not
    tried again, and the circuit counts an answer."""
    text = f"upstream {name!r} refused the request as invalid (its HTTP {status}): {message}"
    return UpstreamFailure(400, ErrorKind.INVALID_REQUEST, text, wire=wire, headers=headers)
