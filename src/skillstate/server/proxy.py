"""The proxy flow for the three generation routes: read, decode, route, forward, relay.

Same wire and an unchanged request: the client's original bytes go upstream and the upstream's
bytes come back as they arrive. Different wires: the canonical request is encoded for the
upstream and the reply (JSON or stream) translated back, event by event.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from skillstate import jsonio
from skillstate.conversation import ErrorKind, ProtocolError, Request, Wire
from skillstate.exchange import Exchange
from skillstate.protocols import adapter
from skillstate.protocols.headers import response_headers, upstream_headers
from skillstate.protocols.portable import portable_request
from skillstate.server import compaction, stateful
from skillstate.server.context import GATEWAY, GatewayContext
from skillstate.server.errors import error_response
from skillstate.server.relay import relay_json, relay_stream, relay_upstream_error
from skillstate.server.sessions import SessionId, resolve_session
from skillstate.upstream.routing import Upstream

log = logging.getLogger("skillstate.proxy")


@dataclass(slots=True)
class Inbound:
    """A decoded client request, ready to forward."""

    wire: Wire
    raw: bytes
    body: dict[str, Any]
    request: Request
    session: SessionId


@dataclass(slots=True)
class Outbound:
    """Where and what the gateway sends for one inbound request."""

    upstream: Upstream
    wire: Wire
    url: str
    payload: bytes
    headers: dict[str, str]


class Refusal(Exception):
    """A request the gateway answers itself with an error in the client's wire."""

    def __init__(self, status: int, message: str, kind: ErrorKind | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind


async def read_inbound(request: web.Request, wire: Wire) -> Inbound:
    """Read and validate the body; every failure is a ``Refusal`` naming what was wrong."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        limit = request.app[GATEWAY].max_body_bytes
        raise Refusal(413, f"request body is over the limit of {limit:,} bytes") from exc
    if not raw:
        raise Refusal(400, "request body is empty; expected a JSON object")
    try:
        body = jsonio.loads(raw)
    except ValueError as exc:
        raise Refusal(400, f"request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise Refusal(400, f"request body must be a JSON object, not {type(body).__name__}")
    try:
        decoded = adapter(wire).decode_request(body)
        session = resolve_session(request.headers, body, wire)
    except ProtocolError as exc:
        raise Refusal(exc.status, exc.message) from exc
    return Inbound(wire, raw, body, decoded, session)


def session_headers(inbound: Inbound, upstream: Upstream | None) -> dict[str, str]:
    headers = {
        "x-skillstate-session": inbound.session.id,
        "x-skillstate-session-source": inbound.session.source,
    }
    if upstream is not None:
        headers["x-skillstate-upstream"] = upstream.name
    return headers


async def handle_generation(request: web.Request, wire: Wire) -> web.StreamResponse:
    gateway = request.app[GATEWAY]
    try:
        inbound = await read_inbound(request, wire)
    except Refusal as refusal:
        return error_response(wire, refusal.status, refusal.message, kind=refusal.kind)
    upstream = gateway.router.route(inbound.request.model)
    ours = session_headers(inbound, upstream)
    if upstream is None:
        return _no_upstream(gateway, inbound, ours)
    target = upstream.wire_for(wire)
    if target is not wire:
        ours["x-skillstate-translated"] = f"{wire.value}->{target.value}"
    taken = await _through_state(request, gateway, inbound, upstream, target, ours)
    if taken is not None:
        return taken
    try:
        payload, dropped = _payload(inbound, target)
    except ProtocolError as exc:
        return error_response(wire, exc.status, exc.message, headers=ours)
    _note_dropped(ours, dropped, target)
    url = upstream.url(adapter(target).path)
    if target is wire and request.query_string:
        url += "?" + request.query_string
    headers = upstream_headers(
        request.headers,
        client_wire=wire,
        upstream_wire=target,
        api_key=upstream.api_key,
        extra=upstream.headers,
    )
    outbound = Outbound(upstream, target, url, payload, headers)
    return await _forward(request, gateway, inbound, outbound, ours)


MODES = ("paper", "hybrid", "off")


async def _through_state(
    request: web.Request,
    gateway: GatewayContext,
    inbound: Inbound,
    upstream: Upstream,
    target: Wire,
    ours: dict[str, str],
) -> web.StreamResponse | None:
    """The reply when the state engine takes the request (a host's compaction request it
    answers from Σ, or a request it rewrites); None when the request passes as it came."""
    engine = gateway.engine
    mode = request_mode(request, gateway.mode)
    if engine is None or mode == "off":
        return None
    if (unwrapped := compaction.unwrap(inbound.request)) is not None:
        inbound.request, inbound.raw = unwrapped
    answered = await compaction.answer_compaction(
        request, gateway, engine, inbound.request, inbound.session, ours
    )
    if answered is not None:
        return answered
    prepared = await engine.prepare(inbound.session.id, inbound.request, mode, target)
    if prepared is None:
        return None
    ours["x-skillstate-mode"] = mode
    _note_dropped(ours, portable_request(prepared.request, target)[1], target)
    flow = stateful.Flow(request, gateway, engine, prepared, upstream, target, ours)
    return await _stateful(flow, inbound, gateway)


def _note_dropped(headers: dict[str, str], dropped: list[str], target: Wire) -> None:
    if dropped:
        headers["x-skillstate-dropped-tools"] = ",".join(dropped)
        log.info("left out tools %s: %s cannot run them", dropped, target.value)


def request_mode(request: web.Request, default: str) -> str:
    """``x-skillstate-mode`` chooses per request; ``x-skillstate-bypass`` turns the state lane
    off (the gateway is then a byte-exact pass-through). An unknown mode is ignored."""
    if request.headers.get("x-skillstate-bypass", "").lower() in ("1", "true", "yes"):
        return "off"
    asked = request.headers.get("x-skillstate-mode", "").lower()
    return asked if asked in MODES else default


async def _stateful(
    flow: stateful.Flow, inbound: Inbound, gateway: GatewayContext
) -> web.StreamResponse:
    started = time.perf_counter()
    exchange = Exchange(
        session=inbound.session.id,
        session_source=inbound.session.source,
        client_wire=inbound.wire,
        upstream_wire=flow.target,
        upstream=flow.upstream.name,
        request=inbound.request,
        response=None,
        status=0,
        streamed=inbound.request.params.stream,
        forwarded_original=False,
        elapsed_s=0.0,
        started=started,
    )
    flow.exchange = exchange
    try:
        if inbound.request.params.stream:
            return await stateful.stream(flow)
        return await stateful.complete(flow)
    except ProtocolError as exc:
        return error_response(inbound.wire, exc.status, exc.message, headers=flow.headers)
    except (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError) as exc:
        message = f"upstream {flow.upstream.name!r} is unreachable: {exc}"
        return error_response(
            inbound.wire, 502, message, kind=ErrorKind.UPSTREAM, headers=flow.headers
        )
    except TimeoutError:
        message = f"upstream {flow.upstream.name!r} did not answer in time"
        return error_response(
            inbound.wire, 504, message, kind=ErrorKind.TIMEOUT, headers=flow.headers
        )
    finally:
        exchange.elapsed_s = time.perf_counter() - started
        if exchange.status:
            _notify(gateway, exchange)


def _payload(inbound: Inbound, target: Wire) -> tuple[bytes, list[str]]:
    if target is inbound.wire:
        return inbound.raw, []
    request, dropped = portable_request(inbound.request, target)
    return jsonio.dumps(adapter(target).encode_request(request)), dropped


def _no_upstream(
    gateway: GatewayContext, inbound: Inbound, headers: dict[str, str]
) -> web.Response:
    if not gateway.router.upstreams:
        message = "no upstream is configured; start the gateway with --upstream URL"
        return error_response(inbound.wire, 502, message, kind=ErrorKind.UPSTREAM, headers=headers)
    message = f"no configured upstream serves model {inbound.request.model!r}"
    return error_response(inbound.wire, 404, message, kind=ErrorKind.NOT_FOUND, headers=headers)


async def _forward(
    request: web.Request,
    gateway: GatewayContext,
    inbound: Inbound,
    outbound: Outbound,
    ours: dict[str, str],
) -> web.StreamResponse:
    upstream, target = outbound.upstream, outbound.wire
    started = time.perf_counter()
    exchange = Exchange(
        session=inbound.session.id,
        session_source=inbound.session.source,
        client_wire=inbound.wire,
        upstream_wire=target,
        upstream=upstream.name,
        request=inbound.request,
        response=None,
        status=0,
        streamed=False,
        forwarded_original=outbound.payload is inbound.raw,
        elapsed_s=0.0,
        started=started,
    )
    try:
        async with gateway.client.post(outbound.url, outbound.payload, outbound.headers) as reply:
            exchange.status = reply.status
            same = target is inbound.wire
            ours.update(response_headers(reply.headers, same_wire=same))
            if reply.status >= 400:
                return await relay_upstream_error(request, reply, inbound.wire, target, ours)
            if "text/event-stream" in reply.headers.get("content-type", ""):
                exchange.streamed = True
                return await relay_stream(request, reply, inbound.request, target, ours, exchange)
            return await relay_json(request, reply, inbound.request, target, ours, exchange)
    except (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError) as exc:
        message = f"upstream {upstream.name!r} is unreachable: {exc}"
        log.warning(message)
        return error_response(inbound.wire, 502, message, kind=ErrorKind.UPSTREAM, headers=ours)
    except TimeoutError:
        message = f"upstream {upstream.name!r} did not answer in time"
        return error_response(inbound.wire, 504, message, kind=ErrorKind.TIMEOUT, headers=ours)
    except aiohttp.ClientError as exc:
        message = f"upstream {upstream.name!r} failed: {type(exc).__name__}: {exc}"
        return error_response(inbound.wire, 502, message, kind=ErrorKind.UPSTREAM, headers=ours)
    finally:
        exchange.elapsed_s = time.perf_counter() - started
        if exchange.status:
            _notify(gateway, exchange)


def _notify(gateway: GatewayContext, exchange: Exchange) -> None:
    """Observers run after the reply was sent; one that fails is logged and skipped."""
    for observer in gateway.observers:
        try:
            observer(exchange)
        except Exception:
            log.exception("observer %r failed", observer)
