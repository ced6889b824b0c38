"""``GET /v1/responses`` upgraded to a WebSocket: the Responses API's socket transport, served
through the same request path as ``POST /v1/responses``.

The wire is ``protocols.openai_responses.socket``'s. Each ``response.create`` frame becomes
one generation request: the upgrade request (as the guard admitted it: its Host, Origin,
token and virtual key were checked before the upgrade, and a token or key it took off stays
off) is cloned as a ``POST`` whose body is the frame's request, written out in full where it
continues the socket's last response (``Chain``), and handed to ``handle_generation``. Its
reply goes to a ``FrameSink`` instead of an HTTP response (``client_stream.SINK``), which
sends each SSE event's data as one text frame; a reply that is no stream (a refusal, an
error before the first byte) becomes one ``error`` frame. So lanes, state, rounds, the
ledger and the budgets see a socket's request as they see a POST's, one exchange per frame.
A virtual key is checked again before each frame, as a ``POST`` with it would be: once it is
revoked or has expired, the frame is answered with a 401 ``error`` frame and the socket closed.

Frames are served one at a time, in order, as the client sends them (Codex waits for each
reply's end), by a task of the socket's own while the socket goes on being read (pings
answered, a close mid-reply seen at once). A ``generate: false`` frame (a warmup) is
answered here, without an upstream call or an exchange. A non-upgrade ``GET`` is answered
405, as before there was a socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time

from aiohttp import WSCloseCode, WSMessage, WSMsgType, hdrs, web
from multidict import CIMultiDict

from skillstate.conversation import Wire
from skillstate.protocols.openai_responses.socket import (
    BETA,
    Chain,
    FrameError,
    Reply,
    decode_frame,
    error_frame,
    response_id,
    warmup,
)
from skillstate.protocols.sse import SSEDecoder
from skillstate.server.client_stream import FRAMING, SINK, ClientGone
from skillstate.server.context import GATEWAY
from skillstate.server.guard import CALLER
from skillstate.server.inbound import FRAMED, JSON_TYPE
from skillstate.server.proxy import handle_generation
from skillstate.server.timing import TIMING, Timing
from skillstate.support import jsonio

log = logging.getLogger("skillstate.socket")

SERVED = "a response served"
WARMED = "a warmup answered"
KEY_ENDED = (
    "the key this socket was opened with has been revoked or has expired: open a new socket "
    "with a usable key"
)
_FRAME_SLACK = 64 * 1024
"""What a frame may hold beyond a body's limit (its ``type``), before the socket refuses it."""
_WAITING = 4
"""Frames a socket keeps waiting behind the one being served (Codex sends one at a time)."""
_HOP = frozenset(
    name.lower()
    for name in (
        hdrs.CONNECTION,
        hdrs.UPGRADE,
        hdrs.CONTENT_LENGTH,
        hdrs.CONTENT_TYPE,
        hdrs.TRANSFER_ENCODING,
        hdrs.SEC_WEBSOCKET_KEY,
        hdrs.SEC_WEBSOCKET_VERSION,
        hdrs.SEC_WEBSOCKET_EXTENSIONS,
        hdrs.SEC_WEBSOCKET_PROTOCOL,
    )
)
"""Headers of the upgrade that describe the socket, not the requests sent on it."""


async def handle_socket(http: web.Request) -> web.StreamResponse:
    """Serve the socket until the client closes it; a plain ``GET`` is not allowed.

    The socket is read all along, also while a reply is being written: a ping is answered
    then (a client's keepalive gives up on a socket that answers none), and a close, or the
    client's connection lost, ends the reply under way (its upstream call is closed, its
    exchange recorded as the client's leaving) instead of streaming it to nobody. Frames
    wait their turn in ``frames`` (``_WAITING`` at most; past that the socket is not read
    until one is served)."""
    socket = web.WebSocketResponse(
        max_msg_size=http.app[GATEWAY].max_body_bytes + _FRAME_SLACK, autoping=True
    )
    if not socket.can_prepare(http).ok:
        raise web.HTTPMethodNotAllowed(http.method, [hdrs.METH_POST])
    await socket.prepare(http)
    frames: asyncio.Queue[WSMessage] = asyncio.Queue(maxsize=_WAITING)
    serving = asyncio.create_task(_serve_frames(http, socket, frames))
    log.info("responses socket opened on %s", http.path)
    try:
        async for message in socket:
            framed = message.type in (WSMsgType.TEXT, WSMsgType.BINARY)
            if framed and not await _queued(frames, message, serving):
                break
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    return socket


async def _queued(
    frames: asyncio.Queue[WSMessage], message: WSMessage, serving: asyncio.Task[None]
) -> bool:
    """``message`` put in line for ``serving``; False when that ended (the client is gone)."""
    if serving.done():
        return False
    if not frames.full():
        frames.put_nowait(message)
        return True
    put = asyncio.ensure_future(frames.put(message))
    try:
        await asyncio.wait((put, serving), return_when=asyncio.FIRST_COMPLETED)
    finally:
        put.cancel()
    return not serving.done()


async def _serve_frames(
    http: web.Request, socket: web.WebSocketResponse, frames: asyncio.Queue[WSMessage]
) -> None:
    """Serve the socket's frames in order, until cancelled or the client is found gone."""
    chain = Chain()
    served = warmups = 0
    try:
        while True:
            message = await frames.get()
            if message.type is WSMsgType.BINARY:
                await _send(socket, error_frame(400, None, "a binary frame is no request"))
                continue
            if not await _key_holds(http):
                await _send(socket, error_frame(401, None, KEY_ENDED))
                await socket.close(code=WSCloseCode.POLICY_VIOLATION, message=b"key ended")
                return
            generated = await _serve(http, socket, chain, message.data)
            served += generated is True
            warmups += generated is False
            if generated is not None:
                log.debug("responses socket: %s", SERVED if generated else WARMED)
    except ClientGone:
        with contextlib.suppress(ConnectionError):
            await socket.close()  # ends the reading too
    finally:
        log.info("responses socket closed: %d responses, %d warmups", served, warmups)


async def _key_holds(http: web.Request) -> bool:
    """Whether the virtual key the socket was opened with (if any) is still usable, as a
    request sent now with it would find it (``keyring``); its record as it is now (its limits
    changed, say) then serves the next frame."""
    key = http.get(CALLER)
    ring = http.app[GATEWAY].keys
    if key is None or ring is None:
        return True
    current = await ring.current(key.digest)
    if current is None:
        return False
    http[CALLER] = current
    return True


async def _serve(
    http: web.Request, socket: web.WebSocketResponse, chain: Chain, text: str
) -> bool | None:
    """Answer one frame: True for a response generated, False for a warmup, None for a frame
    that asked for nothing or was refused."""
    try:
        create = decode_frame(text, jsonio.loads)
    except FrameError as exc:
        await _send(socket, error_frame(400, None, str(exc)))
        return None
    if create is None:
        return None
    body = chain.expand(create.body)
    if not create.generate:
        warm = response_id(secrets.token_hex(24))
        for event in warmup(body, warm, int(time.time())):
            await _send(socket, event)
        chain.keep(body, warm, [])
        return False
    sink = FrameSink(socket)
    out = await _generate(http, sink, jsonio.dumps(body))
    if out is not sink:
        await _send(socket, _unstreamed(out))
        return None
    reply = sink.reply
    if reply.completed and reply.response_id is not None:
        chain.keep(body, reply.response_id, reply.output)
    return True


async def _generate(http: web.Request, sink: FrameSink, raw: bytes) -> web.StreamResponse:
    """The request path of ``POST /v1/responses`` for ``raw``, its stream written to
    ``sink``; a failure the error middleware would have answered, answered alike."""
    headers = CIMultiDict(
        (name, value)
        for name, value in http.headers.items()
        if name.lower() not in _HOP and not (name.lower() == "openai-beta" and value == BETA)
    )
    headers[hdrs.CONTENT_TYPE] = JSON_TYPE
    inner = http.clone(method=hdrs.METH_POST, headers=headers)
    inner[FRAMED] = raw
    inner[SINK] = sink
    inner[TIMING] = Timing(time.perf_counter())
    FRAMING.now += 1
    try:
        return await handle_generation(inner, Wire.RESPONSES)
    except (ClientGone, ConnectionResetError):
        raise ClientGone("the client closed the socket") from None
    except web.HTTPException as exc:
        if sink.prepared:
            return sink
        return web.Response(status=exc.status, text=exc.reason)
    except Exception:
        log.exception("unexpected error on a responses socket")
        if sink.prepared:
            return sink
        return web.Response(status=500, text="internal gateway error; see the gateway's log")
    finally:
        FRAMING.now -= 1


def _unstreamed(out: web.StreamResponse) -> dict[str, object]:
    """The frame for a reply that was no stream: its error, or the response it held."""
    body = out.body if isinstance(out, web.Response) else None
    raw = body if isinstance(body, bytes) else b""
    try:
        parsed = jsonio.loads(raw) if raw else None
    except ValueError:
        parsed = None
    if out.status < 400 and isinstance(parsed, dict) and parsed.get("object") == "response":
        return {"type": "response.completed", "response": parsed}
    status = out.status if out.status >= 400 else 502
    message = raw.decode(errors="replace") or out.reason or "no reply"
    return error_frame(status, parsed if isinstance(parsed, dict) else None, message)


async def _send(socket: web.WebSocketResponse, event: object) -> None:
    try:
        await socket.send_str(jsonio.dumps_str(event))
    except ConnectionError as exc:
        raise ClientGone(str(exc)) from exc


class FrameSink(web.StreamResponse):
    """Where a socket request's SSE reply is written: each event's data goes out as one text
    frame, watched by a ``Reply``; nothing of HTTP (status line, headers) is sent."""

    def __init__(self, socket: web.WebSocketResponse) -> None:
        super().__init__(status=200)
        self._socket = socket
        self._events = SSEDecoder()
        self._opened = False
        self.reply = Reply()

    @property
    def prepared(self) -> bool:
        return self._opened

    async def prepare(self, request: web.BaseRequest) -> None:
        self._opened = True

    async def write(self, data: bytes | bytearray | memoryview) -> None:
        for event in self._events.feed(bytes(data)):
            if not event.data or event.data == "[DONE]":
                continue
            try:
                parsed = jsonio.loads(event.data)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                self.reply.see(parsed)
            try:
                await self._socket.send_str(event.data)
            except ConnectionError as exc:
                raise ClientGone(str(exc)) from exc

    async def write_eof(self, data: bytes = b"") -> None:
        if data:
            await self.write(data)
