"""The byte pass-through: the same wire and a request no lane changed. The client's original
bytes go upstream and the upstream's bytes come back as they arrive, streams chunk by chunk;
an observer rebuilds the canonical reply from what the client got, after it got it.

Only a whole reply is passed on as one: a JSON body is read whole before the client gets it,
inside ``Forward``'s tries (``Outbound.settle``), so one that does not parse or decode as a
reply of its wire is the upstream's retryable failure (``reply_cut_short``), tried again, and
the client gets none of it; a stream is checked at its end, without
holding a byte back, and one that ended short of its terminal event ends with the client
wire's own error event.

``express`` is the same relay for a request never decoded (``server.express``): no observer
decodes the reply; ``protocols.tails`` tells whether it is whole (a JSON body of its wire's
shape; a stream's terminal event), by the same rules, and keeps its bytes for the recorder."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from skillstate.conversation import ProtocolError, Request, Response, Wire
from skillstate.economics.exchange import Relayed
from skillstate.protocols import adapter
from skillstate.protocols.streams import StreamObserver
from skillstate.protocols.tails import StreamTail, json_reply
from skillstate.server.client_stream import ClientGone, ClientStream
from skillstate.server.errors import failure_response
from skillstate.server.forward import CLIENT_GONE, CLIENT_LEFT, Forward
from skillstate.server.inbound import JSON_TYPE
from skillstate.server.outbound import Outbound
from skillstate.server.replies import Reply, UpstreamFailure, reply_cut_short
from skillstate.support import jsonio

log = logging.getLogger("skillstate.relay")


Finish = Callable[[Response | None], Awaitable[None]]
"""What a lane that left the request as it came commits once the reply is known (the state
lane's seed): a JSON reply's before the client has its body, a stream's just after its last
chunk (holding chunks back would delay every token)."""


async def pass_through(
    forward: Forward,
    raw: bytes,
    client: Request,
    headers: dict[str, str],
    query: str,
    finish: Finish | None = None,
) -> web.StreamResponse:
    observed: list[tuple[Response, str | None]] = []

    async def settle(reply: Reply) -> None:
        """A JSON reply read and decoded within the tries: one cut short is tried again."""
        if reply.streamed:
            return
        response, note = _observe(await reply.read(), reply.wire)
        if response is None:
            raise reply_cut_short(reply, note or "no reply")
        observed.append((response, note))

    outbound = Outbound(adapter(forward.wire).path, raw, query, settle=settle)
    try:
        async with forward.send(outbound) as reply:
            headers.update(reply.headers)
            if reply.streamed:
                return await _stream(forward, reply, client, headers, finish)
            body = await reply.read()
            response, note = observed[-1]
    except UpstreamFailure as failure:
        forward.failed(failure.status, failure.message)
        return failure_response(client.source, failure, headers)
    out = _whole(reply, body, headers)
    if finish is not None and reply.status < 400:
        await asyncio.shield(finish(response))
    forward.answered(reply.status, response, note)
    return out


def _whole(reply: Reply, body: bytes, headers: dict[str, str]) -> web.Response:
    """A JSON reply for the client: its bytes, under the upstream's content type as sent."""
    headers[CONTENT_TYPE] = reply.raw.headers.get(CONTENT_TYPE) or JSON_TYPE
    return web.Response(status=reply.status, body=body, headers=headers)


CONTENT_TYPE = "Content-Type"


async def _stream(
    forward: Forward,
    reply: Reply,
    client: Request,
    headers: dict[str, str],
    finish: Finish | None,
) -> web.StreamResponse:
    stream = ClientStream(forward.http, client.source, client, headers)
    observer = StreamObserver(forward.wire)
    tail = b""
    try:
        async for chunk in reply.chunks():
            observer.feed(chunk)  # read before it is sent: a cut found at an end marker
            if observer.ended_short:  # is told before that marker, which ends the client
                return await _ended_short(
                    forward, reply, stream, observer, chunk, tail, client, headers
                )
            await stream.write(chunk)
            tail = (tail + chunk)[-4:]
    except UpstreamFailure as failure:
        forward.answered(reply.status, observer.close(), failure.message)
        return await _fail(stream, failure, tail, client.source, headers)
    except (ClientGone, asyncio.CancelledError):
        # What the upstream made of it so far is spent: the ledger and the key's budget count it.
        forward.answered(CLIENT_GONE, observer.close(), CLIENT_LEFT)
        raise
    response = observer.close()
    if observer.cut:  # the upstream's bytes stop short: say so in the client's wire
        why = CUT
        if observer.broken:
            why += f"; unreadable: {observer.broken}"
        cut = reply_cut_short(reply, why)
        forward.answered(reply.status, response, cut.message)
        return await _fail(stream, cut, tail, client.source, headers)
    note = f"stream observer stopped: {observer.broken}" if observer.broken else None
    forward.answered(reply.status, response, note)
    if finish is not None:
        # The client has every byte already: a client that leaves now cancels this handler,
        # not the commit. What it commits (the seed) is read again from the next request's
        # window, so that request loses nothing if it comes first.
        await asyncio.shield(finish(response))
    return await stream.end()


END_MARKERS = (b"data: [DONE]", b"data:[DONE]")
"""Chat's end-of-stream marker, as servers write it (``ChatStreamDecoder.ended_short``)."""


async def _ended_short(
    forward: Forward,
    reply: Reply,
    stream: ClientStream,
    observer: StreamObserver,
    chunk: bytes,
    tail: bytes,
    client: Request,
    headers: dict[str, str],
) -> web.StreamResponse:
    """The upstream ended its stream (Chat's ``[DONE]``) before the answer was whole: the
    bytes before the marker go on, then the client wire's error event and its own end; the
    upstream's marker would have ended the client's read before any error could reach it."""
    tail = await _before_marker(stream, chunk, tail)
    response = observer.close()
    cut = reply_cut_short(reply, ENDED_SHORT)
    forward.answered(reply.status, response, cut.message)
    return await _fail(stream, cut, tail, client.source, headers)


ENDED_SHORT = "the stream ended without a finish reason"
CUT = "the stream ended before its terminal event"


async def _before_marker(stream: ClientStream, chunk: bytes, tail: bytes) -> bytes:
    """Write what ``chunk`` holds before the end marker in it; the last bytes written."""
    at = min((i for i in (chunk.find(m) for m in END_MARKERS) if i >= 0), default=len(chunk))
    if chunk[:at]:
        await stream.write(chunk[:at])
        tail = (tail + chunk[:at])[-4:]
    return tail


async def _fail(
    stream: ClientStream,
    failure: UpstreamFailure,
    tail: bytes,
    wire: Wire,
    headers: dict[str, str],
) -> web.StreamResponse:
    """The upstream failed: an error response when nothing reached the client yet, else the
    client wire's error event after the relayed bytes. Those may stop inside an event; a blank
    line ends it first, so the error event is read as an event of its own (per the SSE spec a
    blank line dispatches what came before, here a part event the client cannot read)."""
    if not stream.opened:
        return failure_response(wire, failure, headers)
    if not tail.endswith((b"\n\n", b"\r\r", b"\r\n\r\n")):
        await stream.write(b"\n\n")
    return await stream.fail(failure.status, failure.kind, failure.message, relayed=True)


def _observe(raw: bytes, wire: Wire) -> tuple[Response | None, str | None]:
    """The reply ``raw`` holds, or None and why not (it does not parse whole, or is not a
    complete reply of ``wire``)."""
    try:
        return adapter(wire).decode_response(jsonio.loads(raw)), None
    except (ProtocolError, ValueError, TypeError, KeyError) as exc:
        return None, f"not a whole reply: {exc}"


async def express(
    forward: Forward, relayed: Relayed, wire: Wire, headers: dict[str, str], query: str
) -> web.StreamResponse:
    """``pass_through`` of a request never decoded (``server.express``): the same tries, the
    same whole-reply rules, the reply watched by ``protocols.tails`` instead of decoded; what
    came is left on ``relayed`` for the recorder."""

    async def settle(reply: Reply) -> None:
        if reply.streamed:
            return
        try:
            relayed.reply = json_reply(reply.wire, await reply.read())
        except ValueError as exc:
            raise reply_cut_short(reply, f"not a whole reply: {exc}") from exc

    outbound = Outbound(adapter(forward.wire).path, relayed.body, query, settle=settle)
    try:
        async with forward.send(outbound) as reply:
            headers.update(reply.headers)
            if reply.streamed:
                return await _express_stream(forward, reply, relayed, wire, headers)
            body = await reply.read()
    except UpstreamFailure as failure:
        forward.failed(failure.status, failure.message)
        return failure_response(wire, failure, headers)
    out = _whole(reply, body, headers)
    forward.answered(reply.status, None)
    return out


async def _express_stream(
    forward: Forward, reply: Reply, relayed: Relayed, wire: Wire, headers: dict[str, str]
) -> web.StreamResponse:
    stream = ClientStream(forward.http, wire, None, headers)
    watch = StreamTail(forward.wire)
    last = b""
    try:
        async for chunk in reply.chunks():
            watch.feed(chunk)  # read before it is sent, as pass_through's observer
            if watch.ended_short:
                last = await _before_marker(stream, chunk, last)
                relayed.reply = watch.close()
                cut = reply_cut_short(reply, ENDED_SHORT)
                forward.answered(reply.status, None, cut.message)
                return await _fail(stream, cut, last, wire, headers)
            await stream.write(chunk)
            last = chunk[-4:] if len(chunk) >= 4 else (last + chunk)[-4:]
    except UpstreamFailure as failure:
        relayed.reply = watch.close()
        forward.answered(reply.status, None, failure.message)
        return await _fail(stream, failure, last, wire, headers)
    except (ClientGone, asyncio.CancelledError):
        relayed.reply = watch.close()  # what came is spent, as pass_through's
        raise
    relayed.reply = watch.close()
    if watch.cut:
        cut = reply_cut_short(reply, CUT)
        forward.answered(reply.status, None, cut.message)
        return await _fail(stream, cut, last, wire, headers)
    forward.answered(reply.status, None)
    return await stream.end()
