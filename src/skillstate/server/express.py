"""The express path: a request that no lane can change, relayed without being decoded.

A request for an upstream of the client's own wire that no lane would change goes up as the
client's bytes and comes back as the upstream's, as ``relay.pass_through`` would send them:

* in mode ``off`` (the gateway's mode, ``x-skillstate-mode``, a bypass, or a login passed
  through untouched), running no lane but those that change nothing in mode off
  (``LaneSpec.idle_off``);
* in hybrid mode, running no lane but those idle while a session is passed through before
  its first boundary (``LaneSpec.idle_passing``), holding no host's compaction
  (``state.compaction.may_compact``), and either offering no tools (the state lane takes
  none) or of a session the state lane passes through that this request cannot move to a
  boundary (``state.passing``: the step is counted, the rest caught up on later) and that
  adds no tool output long enough for the outputs lane to view (the state lane prices
  compacting it: ``state.bulky``).

Such a request costs only what relaying needs: the routing fields and the session read from
the parsed body (``scan``), no canonical request, no lanes, no round loop, the reply watched
for its end by ``protocols.tails`` instead of decoded. What the ledger needs of it (the usage,
the model, the gateway's own count where the provider reported none) is read from the bytes
by the recorder, off the request path (``economics.ledger.relayed``).

Everything the route decides is decided as for any request (``route.admit`` and
``route.serve`` over the same ``Arrival``): a request ``scan`` cannot read plainly (a model
that is not a string, a session header that is not valid, no list of messages or input
items, more messages than ``max_messages``) is left to the full path, which refuses it in its
own words. The limit on parts and the checks of each message guard the work of decoding,
which this path does not do (the upstream judges what a relayed body holds); the body's size
limit holds for every request.
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
from skillstate.protocols.openai_chat.params import asks_usage
from skillstate.protocols.signals import newest_output_chars
from skillstate.server import relay, route
from skillstate.server.context import GatewayContext
from skillstate.server.forward import Forward
from skillstate.server.guard import caller_of, tenant_of
from skillstate.server.inbound import MODE, bypassed, take_login_of
from skillstate.server.route import Arrival, Ran, Relay, RunLanes
from skillstate.server.sessions import SessionId, resolve_session
from skillstate.server.timing import trace_of
from skillstate.state.compaction import may_compact
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
    passed: bool
    """The state lane passes the request through (``state.passing``): its step is counted."""


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
    mode = route.mode_for(bypass or untouched, asked, gateway.mode)
    if mode is Mode.OFF:
        idle = gateway.idle_off
    elif mode is Mode.HYBRID and gateway.engine is not None:
        if wire is Wire.CHAT and stream and not asks_usage(body):
            return None  # the full path asks the provider for the usage hybrid's bill needs
        idle = gateway.idle_passing
    else:
        return None
    if not untouched and any(lane.name not in idle for lane in chosen):
        return None  # a lane that may act: run it (an untouched login runs none)
    tenant = None
    if gateway.keys is not None and gateway.keys.ever_active:  # else no key can have come
        caller = caller_of(http, gateway)
        if caller is not None and not caller.allows(model):
            return None  # the full path refuses it, in the client's wire
        tenant = tenant_of(caller)
    try:
        session = resolve_session(http.headers, body, wire, tenant)
    except (ProtocolError, TypeError, ValueError, KeyError, IndexError, AttributeError):
        return None
    messages = _messages(body, wire)
    if messages is None or messages > gateway.max_messages:
        return None  # the full path says what is wrong with it
    fallbacks = gateway.router.fallbacks(upstream)
    passed = False
    if mode is Mode.HYBRID:
        state = any(lane.name == route.STATE_LANE for lane in chosen)
        if state and (body.get("tools") or body.get("functions")):
            engine = gateway.engine
            assert engine is not None  # checked with the mode
            if not engine.passing.passes(session.id, messages):
                return None
            least = engine.viewer.min_chars if engine.viewer is not None else len(raw) + 1
            if len(raw) >= least and newest_output_chars(wire, body) >= least:
                return None  # a bulky output (none is longer than the body): the state lane's
            if any(f.wire_for(wire) is not wire for f in fallbacks):
                return None  # a fallback of another wire takes the round loop (route.serve)
            passed = True
        if may_compact(raw):  # last: one search of the body per mark
            return None  # a host's compaction, or the gateway's compaction items
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
    return arrival, Express(raw, session, upstream, fallbacks, login, model, stream, passed)


def _messages(body: dict[str, Any], wire: Wire) -> int | None:
    """At most how many canonical messages ``body`` decodes to, on any wire: its list of
    messages or input items, and one for a system prompt or instructions beside it (None
    where there is no such list, or it is not one: the full path refuses it, in words)."""
    listed = body.get("input" if wire is Wire.RESPONSES else "messages")
    if isinstance(listed, str) and wire is Wire.RESPONSES:
        return 2
    return len(listed) + 1 if isinstance(listed, list) else None


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
    ran = NOTHING_RAN
    if express.passed:
        assert gateway.engine is not None  # scan asked it
        step = gateway.engine.passing.relayed(express.session.id)
        summary = f"{route.STATE_LANE}=hybrid:step{step}"
        ran = Ran(summary=summary, followup=True, untouched=True)
    service = route.serve(arrival, run, ran)
    assert isinstance(service, Relay)  # same wire, nothing changed: relayed
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
        mode=service.record.mode.value,
        lanes=service.record.lanes,
        login=express.login,
        model=express.model,
        relayed=relayed,
        trace=None if gateway.telemetry is None else trace_of(http),
    )
    forward = Forward(gateway, http, express.upstream, wire, wire, exchange)
    forward.login = express.login
    forward.fallbacks = express.fallbacks
    async with forward.recording():
        return await relay.express(forward, relayed, wire, dict(service.headers), http.query_string)


NOTHING_RAN = Ran()
"""What the lanes did to a request no lane ran on (a frozen record: one serves them all)."""


def tell_untouched(gateway: GatewayContext, session: str) -> None:
    """One info line per session whose subscription login passes through untouched."""
    told = gateway.untouched_told
    if told.get(session) is None:
        told.put(session, True)
        log.info(UNTOUCHED_NOTE, session)
