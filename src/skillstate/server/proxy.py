"""The generation routes: read → plan → perform.

``handle_generation`` reads the request into plain facts (``route.Arrival``), asks the pure
``route.admit`` and, once the lanes ran, ``route.serve`` how to serve it (``server/route.py``
holds every rule of that choice), and performs the route: a refusal in the client's wire, a
lane's own answer (host compaction) without an upstream call, the client's bytes relayed
(``relay``), or the canonical request as the lanes left it through the round loop (``turn``).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from skillstate.conversation import Profile, Request, Response, Wire
from skillstate.pipeline import ArchiveWrite, Lane, LaneContext, PipelineResult, run_lanes
from skillstate.pipeline.lane_runner import Keep
from skillstate.protocols import adapter
from skillstate.protocols.logins import login_of
from skillstate.protocols.openai_responses import chatgpt
from skillstate.protocols.openai_responses.history import not_found, previous_response
from skillstate.server import express, local_answers, relay, route
from skillstate.server.context import GATEWAY, GatewayContext
from skillstate.server.errors import error_response
from skillstate.server.exchanges import exchange_for, notify_local
from skillstate.server.express import Express, tell_untouched
from skillstate.server.forward import Forward
from skillstate.server.history import ResponseHistory, UnknownResponse
from skillstate.server.inbound import (
    MODE,
    Inbound,
    Refusal,
    bypassed,
    chosen_lanes,
    decode_inbound,
    read_body,
    request_extra,
    take_login,
)
from skillstate.server.route import (
    Answered,
    Arrival,
    Loop,
    Ran,
    Refuse,
    Refused,
    Relay,
    RunLanes,
    Unknown,
)
from skillstate.server.sessions import SessionId
from skillstate.server.timing import trace_of
from skillstate.server.turn import Turn, answer_locally, upstream_body
from skillstate.storage.tenants import owner, owns
from skillstate.support import jsonio
from skillstate.upstream.routing import Upstream

log = logging.getLogger("skillstate.proxy")


async def handle_generation(http: web.Request, wire: Wire) -> web.StreamResponse:
    """Read → plan → perform: what the request is (``_read``), how it is served (the pure
    ``route.admit`` and ``route.serve``), and that, done."""
    gateway = http.app[GATEWAY]
    read = await _read(http, wire, gateway)
    match route.admit(read.arrival):
        case Refuse() as refuse:
            out = error_response(
                wire, refuse.status, refuse.message, kind=refuse.kind, headers=refuse.headers
            )
            return local_answers.answered(http, out, refuse.reason, refuse.message)
        case Unknown() as unknown:
            body = jsonio.dumps(not_found(unknown.response_id))
            out = web.Response(
                status=404, body=body, headers=unknown.headers, content_type="application/json"
            )
            reason = "unknown_response_id"
            return local_answers.answered(http, out, reason, unknown.response_id)
        case RunLanes() as run:
            if read.express is not None:
                return await express.serve(http, gateway, read.arrival, run, read.express)
            return await _run(http, gateway, read, run)


@dataclass(frozen=True, slots=True)
class _Taken:
    """What performing an admitted request needs, as read."""

    inbound: Inbound
    client: Request
    """The request as the client sent it (``inbound.request`` is the conversation a
    ``previous_response_id`` names, written out)."""
    upstream: Upstream | None
    fallbacks: list[Upstream]
    chosen: list[Lane]
    extra: dict[str, str]


@dataclass(frozen=True, slots=True)
class _Read:
    """A request as read: the plain facts its route is planned from, and what performing the
    route needs (None where reading refused the request)."""

    arrival: Arrival
    taken: _Taken | None = None
    express: Express | None = None
    """Set where the request is served by the express path, undecoded (``server.express``)."""


async def _read(http: web.Request, wire: Wire, gateway: GatewayContext) -> _Read:
    """Everything the route is planned from, read: the body, the headers, the upstream for
    the model and, for an upstream of another wire, the conversation a
    ``previous_response_id`` names."""
    try:
        raw, body = await read_body(http, wire)
        chosen = chosen_lanes(http, gateway.lanes, gateway.lanes_off)
        extra = request_extra(http, gateway.lane_headers)
        scanned = express.scan(http, gateway, wire, raw, body, chosen)
        if scanned is not None:
            return _Read(scanned[0], express=scanned[1])
        inbound = decode_inbound(http, wire, raw, body)
    except Refusal as refusal:
        refused = Refused(refusal.status, refusal.message, refusal.kind, refusal.reason)
        return _Read(Arrival(wire, refused=refused, login=login_of(http.headers)))
    client = inbound.request
    upstream = take_login(inbound, http, gateway.router, wire)
    login = inbound.login
    target = upstream.wire_for(wire) if upstream is not None else None
    history = gateway.history
    unknown = None
    if history is not None and route.expands(wire, target):
        unknown = await _continue(history, inbound)
    fallbacks = gateway.router.fallbacks(upstream) if upstream is not None else []
    arrival = Arrival(
        wire,
        model=client.model,
        session=(inbound.session.id, inbound.session.source),
        upstream=upstream.name if upstream is not None else None,
        target=target,
        configured=bool(gateway.router.upstreams),
        unknown=unknown,
        bypass=bypassed(http),
        mode=http.headers.get(MODE),
        default_mode=gateway.mode,
        lanes=tuple(lane.name for lane in chosen),
        reshaped=adapter(wire).for_upstream(client) is not client,
        fallbacks=tuple(f.wire_for(wire) for f in fallbacks),
        size=len(inbound.raw),
        history=history is not None,
        login=login,
        subscription_rewrite=gateway.subscription_rewrite,
    )
    return _Read(arrival, _Taken(inbound, client, upstream, fallbacks, chosen, extra))


async def _run(
    http: web.Request, gateway: GatewayContext, read: _Read, run: RunLanes
) -> web.StreamResponse:
    """Run the lanes, then serve the request as ``route.serve`` says."""
    taken = read.taken
    assert taken is not None and taken.upstream is not None  # admitted: read, and served
    inbound = taken.inbound
    context = LaneContext(inbound.session.id, inbound.wire, run.target, run.mode, extra=taken.extra)
    if run.untouched:
        tell_untouched(gateway, inbound.session.id)
    chosen = [] if run.untouched else taken.chosen
    lanes = await run_lanes(chosen, inbound.request, context, _keeper(gateway))
    ran = _ran(lanes)
    if taken.upstream.profile is Profile.CHATGPT and lanes.request is not inbound.request:
        unsafe = _unsafe(inbound.raw, lanes.request, run.target)
        ran = dataclasses.replace(ran, unsafe=unsafe)
    match route.serve(read.arrival, run, ran):
        case Answered() as answered:
            assert lanes.answer is not None  # what route.serve saw
            return await _answered(http, gateway, inbound, lanes.answer, answered)
        case Relay() | Loop() as service:
            exchange = exchange_for(
                inbound.request,
                read.arrival.session,
                upstream=taken.upstream.name,
                wire=run.target,
                mode=service.record.mode.value,
                forwarded_original=service.record.forwarded_original,
                lanes=service.record.lanes,
                sent=lanes.request,
                login=inbound.login,
                trace=None if gateway.telemetry is None else trace_of(http),
            )
            forward = Forward(gateway, http, taken.upstream, inbound.wire, run.target, exchange)
            forward.login = inbound.login
            forward.fallbacks = taken.fallbacks
            return await _upstream(forward, taken, lanes, service)


def _ran(lanes: PipelineResult) -> Ran:
    followup = lanes.followup
    return Ran(
        summary=lanes.header(),
        changed=lanes.changed,
        answered=lanes.answer is not None,
        compaction=_compaction(lanes),
        followup=followup is not None,
        untouched=followup is not None and followup.untouched,
        handover=followup is not None and followup.handover is not None,
    )


def _unsafe(raw: bytes, request: Request, target: Wire) -> tuple[str, ...]:
    """What the ChatGPT backend may refuse or misread in ``request`` (the lanes' rewrite of
    the client's ``raw`` body), as it would be sent; logged, since the request then goes up
    as it came."""
    body, _ = upstream_body(request, target, Profile.CHATGPT)
    problems = tuple(chatgpt.unsafe_rewrite(raw, jsonio.loads(body)))
    if problems:
        log.warning(
            "a request for the ChatGPT backend goes up as it came: its rewrite %s",
            "; ".join(problems),
        )
    return problems


def _compaction(lanes: PipelineResult) -> str | None:
    """What the answering lane's report calls its compaction (None: nothing, or no lane)."""
    kind = lanes.reports[-1].report.get("compaction") if lanes.reports else None
    return str(kind) if kind else None


async def _upstream(
    forward: Forward, taken: _Taken, lanes: PipelineResult, service: Relay | Loop
) -> web.StreamResponse:
    """Serve the request from its upstream, relayed or through the round loop; ``forward``
    records its ``Exchange`` and finishes it once, whichever way the request ends."""
    headers = dict(service.headers)
    query = forward.http.query_string
    async with forward.recording():
        match service:
            case Relay():
                finish = lanes.followup.finish if lanes.followup is not None else None
                return await relay.pass_through(
                    forward, taken.inbound.raw, taken.client, headers, query, finish
                )
            case Loop():
                gateway = forward.gateway
                turn = Turn(forward, taken.client, headers, lanes.followup, query)
                turn.after_handover = _rerun(taken, service.rerun, lanes.context, gateway)
                turn.big = service.big
                turn.remember = _remembered(gateway, taken.inbound) if service.remember else None
                return await turn.serve(lanes.request)


async def _continue(history: ResponseHistory, inbound: Inbound) -> str | None:
    """Write out the conversation a ``previous_response_id`` names; the continuation keeps the
    session of what it continues unless the client named its own. The id, when the gateway
    never kept it, or kept for another tenant's session (``storage.tenants``: a tenant's
    request continues only its own)."""
    scope = owner(inbound.session.id)
    try:
        expanded, session = await history.expand(inbound.request, scope)
    except UnknownResponse as unknown:
        return unknown.response_id
    if scope is not None and (session is None or not owns(scope, session)):
        return previous_response(inbound.request)
    inbound.request = expanded
    if session is not None and inbound.session.source == "fingerprint":
        inbound.session = SessionId(session, "previous-response")
    return None


def _rerun(
    taken: _Taken, names: tuple[str, ...], context: LaneContext, gateway: GatewayContext
) -> Callable[[Request], Awaitable[Request]] | None:
    """The lanes ``names`` (those after the state lane), run again on the request its
    handover round leads to; None when there are none."""
    later = [lane for lane in taken.chosen if lane.name in names]
    if not later:
        return None
    keep = _keeper(gateway)

    async def run(request: Request) -> Request:
        return (await run_lanes(later, request, context, keep)).request

    return run


def _remembered(
    gateway: GatewayContext, inbound: Inbound
) -> Callable[[Response], Awaitable[None]] | None:
    """What keeps the reply for a later ``previous_response_id``."""
    history = gateway.history
    if history is None:
        return None
    return functools.partial(history.keep, inbound.request, session=inbound.session.id)


def _keeper(gateway: GatewayContext) -> Keep | None:
    """What keeps the lanes' archive writes: the state engine's archive, where ``recall``
    finds them (None without an engine: a lane that would write is then skipped)."""
    engine = gateway.engine
    if engine is None:
        return None
    archive = engine.archive

    async def keep(write: ArchiveWrite) -> None:
        await archive.put(write.session, write.ref, write.data, write.summary)

    return keep


async def _answered(
    http: web.Request,
    gateway: GatewayContext,
    inbound: Inbound,
    answer: Response,
    answered: Answered,
) -> web.StreamResponse:
    started = time.perf_counter()
    headers = dict(answered.headers)
    out = await answer_locally(http, inbound.request, answer, headers)
    notify_local(
        gateway,
        inbound.request,
        (inbound.session.id, inbound.session.source),
        answer,
        mode=answered.mode.value,
        note="compaction answered from the session state",
        lanes=answered.lanes,
        started=started,
        login=inbound.login,
        trace=None if gateway.telemetry is None else trace_of(http),
    )
    return out
