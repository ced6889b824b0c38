"""Relaying the upstream's reply to the client: streams chunk by chunk, JSON whole, errors in
the client's wire. The client always gets its bytes before any observing is done."""

from __future__ import annotations

import logging
import time

import aiohttp
from aiohttp import web

from skillstate import jsonio
from skillstate.conversation import ErrorKind, ProtocolError, Request, Response, ToolCall, Wire
from skillstate.exchange import Exchange
from skillstate.protocols import adapter
from skillstate.protocols.portable import namespace_map, restore_namespace
from skillstate.protocols.streams import StreamObserver, StreamTranslator
from skillstate.server.errors import error_response

log = logging.getLogger("skillstate.relay")


async def relay_stream(
    request: web.Request,
    reply: aiohttp.ClientResponse,
    client_request: Request,
    target: Wire,
    headers: dict[str, str],
    exchange: Exchange,
) -> web.StreamResponse:
    out = web.StreamResponse(status=reply.status, headers=headers)
    out.content_type = "text/event-stream"
    out.headers["cache-control"] = "no-cache"
    await out.prepare(request)
    try:
        if target is client_request.source:
            exchange.response = await _pass_through(reply, out, target, exchange)
        else:
            exchange.response = await _translate(reply, out, client_request, target, exchange)
    except BaseException:
        reply.close()  # the client went away: drop the upstream connection, stop generation
        raise
    await out.write_eof()
    return out


async def _pass_through(
    reply: aiohttp.ClientResponse, out: web.StreamResponse, wire: Wire, exchange: Exchange
) -> Response | None:
    observer = StreamObserver(wire)
    try:
        async for chunk in reply.content.iter_any():
            if exchange.first_byte_s is None:
                exchange.first_byte_s = time.perf_counter() - exchange.started
            await out.write(chunk)
            observer.feed(chunk)
    except aiohttp.ClientPayloadError as exc:
        exchange.note = f"upstream stream broke: {exc}"
        log.warning(exchange.note)
    response = observer.close()
    if observer.broken:
        exchange.note = f"stream observer stopped: {observer.broken}"
    return response


async def _translate(
    reply: aiohttp.ClientResponse,
    out: web.StreamResponse,
    client_request: Request,
    target: Wire,
    exchange: Exchange,
) -> Response:
    translator = StreamTranslator(target, client_request.source, client_request)
    try:
        async for chunk in reply.content.iter_any():
            data = translator.feed(chunk)
            if data:
                if exchange.first_byte_s is None:
                    exchange.first_byte_s = time.perf_counter() - exchange.started
                await out.write(data)
        tail = translator.close()
    except aiohttp.ClientPayloadError as exc:
        exchange.note = f"upstream stream broke: {exc}"
        tail = translator.fail(exchange.note)
    except (ProtocolError, ValueError, KeyError, TypeError) as exc:
        exchange.note = f"upstream stream could not be translated: {exc}"
        log.warning(exchange.note)
        tail = translator.fail(exchange.note)
    if tail:
        await out.write(tail)
    return translator.response()


async def relay_json(
    request: web.Request,
    reply: aiohttp.ClientResponse,
    client_request: Request,
    target: Wire,
    headers: dict[str, str],
    exchange: Exchange,
) -> web.StreamResponse:
    raw = await reply.read()
    client_wire = client_request.source
    if target is client_wire:
        out = await _send(request, reply.status, raw, headers)
        exchange.response = _observe(raw, target, exchange)
        return out
    try:
        response = restore_namespaces(
            adapter(target).decode_response(jsonio.loads(raw)), client_request
        )
        body = jsonio.dumps(adapter(client_wire).encode_response(response, client_request))
    except (ProtocolError, ValueError, TypeError) as exc:
        message = f"upstream reply could not be translated to {client_wire.value}: {exc}"
        exchange.note = message
        return error_response(client_wire, 502, message, kind=ErrorKind.UPSTREAM, headers=headers)
    exchange.response = response
    return await _send(request, reply.status, body, headers)


def restore_namespaces(response: Response, client_request: Request) -> Response:
    names = namespace_map(client_request)
    if names:
        parts = response.message.parts
        response.message.parts = [
            restore_namespace(p, names) if isinstance(p, ToolCall) else p for p in parts
        ]
    return response


async def _send(
    request: web.Request, status: int, body: bytes, headers: dict[str, str]
) -> web.StreamResponse:
    out = web.StreamResponse(status=status, headers=headers)
    out.content_type = "application/json"
    out.content_length = len(body)
    await out.prepare(request)
    await out.write(body)
    await out.write_eof()
    return out


def _observe(raw: bytes, wire: Wire, exchange: Exchange) -> Response | None:
    try:
        return adapter(wire).decode_response(jsonio.loads(raw))
    except (ProtocolError, ValueError, TypeError) as exc:
        exchange.note = f"reply not understood: {exc}"
        return None


async def relay_upstream_error(
    request: web.Request,
    reply: aiohttp.ClientResponse,
    client_wire: Wire,
    target: Wire,
    headers: dict[str, str],
) -> web.StreamResponse:
    """An upstream error reaches the client with its status; across wires its body is
    rewritten in the client's error shape, keeping the provider's message."""
    raw = await reply.read()
    if target is client_wire:
        out = web.Response(status=reply.status, body=raw, headers=headers)
        out.content_type = reply.content_type or "application/json"
        return out
    try:
        parsed = jsonio.loads(raw) if raw else None
    except ValueError:
        parsed = None
    body = parsed if isinstance(parsed, dict) else None
    kind, message = adapter(target).decode_error(reply.status, body)
    status = reply.status
    if kind is ErrorKind.OVERLOADED:
        # Each wire has its own overload status, and clients retry on theirs only.
        status = 529 if client_wire is Wire.MESSAGES else 503
    return error_response(client_wire, status, message, kind=kind, headers=headers)
