"""The express path: a request that no lane can change, relayed without being decoded.

A request in mode ``off`` (the gateway's mode, ``x-skillstate-mode``, a bypass, or a login
passed through untouched) for an upstream of the client's own wire, that runs no lane but
those that change nothing in mode off (``LaneSpec.idle_off``), goes up as the client's bytes
and comes back as the upstream's, as ``relay.pass_through`` would send them, and costs only
what that needs: the routing fields and the session read from the parsed body (``scan``),
no canonical request, no lanes, no round loop, the reply watched for its end by
``protocols.tails`` instead of decoded. What the ledger needs of it (the usage, the model,
the gateway's own count where the provider reported none) is read from the bytes by the
recorder, off the request path (``economics.ledger.relayed``).

Everything the route decides is decided as for any request (``route.admit`` and
``route.serve`` over the same ``Arrival``): a request ``scan`` cannot read plainly (a model
that is not a string, a session header that is not valid) is left to the full path, which
refuses it in its own words. The gateway's limits on messages and parts guard the work of
decoding, which this path does not do; the body's size limit holds for every request.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from skillstate.conversation import ProtocolError, Wire
from skillstate.economics.exchange import Exchange, Relayed
from skillstate.pipeline.lane import Lane
from skillstate.protocols.logins import Login
from skillstate.server import relay, route
from skillstate.server.context import GatewayContext
from skillstate.server.forward import Forward
from skillstate.server.inbound import MODE, bypassed, take_login_of
from skillstate.server.route import Arrival, Ran, Relay, RunLanes
from skillstate.server.sessions import SessionId, resolve_session
from skillstate.state.mode import Mode
from skillstate.upstream.routing import Upstream

log = logging.getLogger("skillstate.proxy")


UNTOUCHED_NOTE = (
    "session %s: Claude Code's subscription login: passed through untouched (mode off, no "
    "lane), as Anthropic allows that login for Claude Code only; for the savings use an API "
    "key (ANTHROPIC_API_KEY), or let the gateway hold one (SKILLSTATE_API_KEY) and send a "
    "placeholder key (docs/integrations.md)"
)


@dataclass(frozen=True, slots=True)
class Express:
    """What serving a request by the express path needs, as ``scan`` read it."""

    raw: bytes
    session: SessionId
    upstream: Upstream
    fallbacks: list[Upstream]
    login: Login
    model: str
    stream: bool


def scan(
    http: web.Request,
    gateway: GatewayContext,
    wire: Wire,
    raw: bytes,
    body: dict[str, Any],
    chosen: list[Lane],
) -> tuple[Arrival, Express] | None:
    """The request's ``Arrival`` and what serving it needs, where the express path serves
    it; None where the full path must (see the module)."""
    model = body.get("model")
    stream = body.get("stream", False)
    if not isinstance(model, str) or not isinstance(stream, bool):
        return None
    login, upstream = take_login_of(http, gateway.router, wire, model)
    if upstream is None or upstream.wire_for(wire) is not wire:
        return None  # refused, or translated: the full path's
    bypass = bypassed(http)
    asked = http.headers.get(MODE)
    untouched = route.untouched_login(login, gateway.subscription_rewrite)
    if route.mode_for(bypass or untouched, asked, gateway.mode) is not Mode.OFF:
        return None
    if not untouched and any(lane.name not in gateway.idle_off for lane in chosen):
        return None  # a lane that may act in mode off: run it (an untouched login runs none)
    try:
        session = resolve_session(http.headers, body, wire)
    except (ProtocolError, TypeError, ValueError, KeyError, IndexError, AttributeError):
        return None
    fallbacks = gateway.router.fallbacks(upstream)
    arrival = Arrival(
        wire,
        model=model,
        session=(session.id, session.source),
        upstream=upstream.name,
        target=wire,
        configured=True,
        bypass=bypass,
        mode=asked,
        default_mode=gateway.mode,
        lanes=tuple(lane.name for lane in chosen),
        fallbacks=tuple(f.wire_for(wire) for f in fallbacks),
        size=len(raw),
        history=gateway.history is not None,
        login=login,
        subscription_rewrite=gateway.subscription_rewrite,
    )
    return arrival, Express(raw, session, upstream, fallbacks, login, model, stream)


async def serve(
    http: web.Request,
    gateway: GatewayContext,
    arrival: Arrival,
    run: RunLanes,
    express: Express,
) -> web.StreamResponse:
    """Relay the request as ``route.serve`` says a request no lane touched is served."""
    if run.untouched:
        tell_untouched(gateway, express.session.id)
    service = route.serve(arrival, run, Ran())
    assert isinstance(service, Relay)  # same wire, mode off, nothing ran: relayed
    wire = arrival.wire
    relayed = Relayed(express.raw)
    exchange = Exchange(
        session=express.session.id,
        session_source=express.session.source,
        client_wire=wire,
        upstream_wire=wire,
        upstream=express.upstream.name,
        request=None,
        response=None,
        status=0,
        streamed=express.stream,
        forwarded_original=True,
        elapsed_s=0.0,
        started=time.perf_counter(),
        mode=Mode.OFF.value,
        login=express.login,
        model=express.model,
        relayed=relayed,
    )
    forward = Forward(gateway, http, express.upstream, wire, wire, exchange)
    forward.login = express.login
    forward.fallbacks = express.fallbacks
    async with forward.recording():
        return await relay.express(forward, relayed, wire, dict(service.headers), http.query_string)


def tell_untouched(gateway: GatewayContext, session: str) -> None:
    """One info line per session whose subscription login passes through untouched."""
    told = gateway.untouched_told
    if told.get(session) is None:
        told.put(session, True)
        log.info(UNTOUCHED_NOTE, session)
