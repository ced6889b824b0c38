"""The generation routes: route → decode → lanes → forward → rounds → encode.

Same wire and a request no lane changed: the client's original bytes go upstream and the
upstream's bytes come back as they arrive (``relay``). Otherwise the canonical request, as the
lanes left it, is encoded for the upstream and the reply translated back, through the round
loop (``turn``). A lane that answered the request itself (host compaction) is answered here
without an upstream call.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from skillstate.conversation import ErrorKind, Request, Wire
from skillstate.pipeline import ArchiveWrite, Lane, LaneContext, PipelineResult, run_lanes
from skillstate.pipeline.lane_runner import Keep
from skillstate.protocols import adapter
from skillstate.protocols.openai_responses.history import not_found
from skillstate.server import relay
from skillstate.server.context import GATEWAY, GatewayContext
from skillstate.server.errors import error_response
from skillstate.server.forward import Forward, exchange_for, notify_local
from skillstate.server.history import ResponseHistory, UnknownResponse
from skillstate.server.inbound import (
    Inbound,
    Refusal,
    chosen_lanes,
    read_inbound,
    request_extra,
    request_mode,
    session_headers,
)
from skillstate.server.sessions import SessionId
from skillstate.server.turn import Turn, answer_locally
from skillstate.state.mode import Mode
from skillstate.support import jsonio

log = logging.getLogger("skillstate.proxy")


async def handle_generation(http: web.Request, wire: Wire) -> web.StreamResponse:
    gateway = http.app[GATEWAY]
    try:
        inbound = await read_inbound(http, wire)
        chosen = chosen_lanes(http, gateway.lanes, gateway.lanes_off)
        extra = request_extra(http, gateway.lane_headers)
    except Refusal as refusal:
        return error_response(wire, refusal.status, refusal.message, kind=refusal.kind)
    upstream = gateway.router.route(inbound.request.model)
    target = upstream.wire_for(wire) if upstream is not None else wire
    client = inbound.request
    if target is not wire and gateway.history is not None:
        try:
            await _continue(gateway.history, inbound)
        except UnknownResponse as unknown:
            body = jsonio.dumps(not_found(unknown.response_id))
            headers = session_headers(inbound, upstream)
            return web.Response(
                status=404, body=body, headers=headers, content_type="application/json"
            )
    ours = session_headers(inbound, upstream)
    if upstream is None:
        return _no_upstream(gateway, inbound, ours)
    if target is not wire:
        ours["x-skillstate-translated"] = f"{wire.value}->{target.value}"
    mode = request_mode(http, gateway.mode)
    context = LaneContext(inbound.session.id, inbound.wire, target, mode, extra=extra)
    lanes = await run_lanes(chosen, inbound.request, context, _keeper(gateway))
    if lanes.header():
        ours["x-skillstate-lanes"] = lanes.header()
    session = (inbound.session.id, inbound.session.source)
    if lanes.answer is not None:
        return await _answered(http, gateway, inbound, lanes, ours, mode)
    if lanes.followup is not None:
        ours["x-skillstate-mode"] = mode.value
    # A request the upstream must be asked differently (a Chat stream that did not ask for
    # its usage: the ledger needs it) goes through the round loop, whose stream encoder sends
    # the client only what it asked for.
    same = target is wire and not lanes.changed and adapter(wire).for_upstream(client) is client
    exchange = exchange_for(
        inbound.request,
        session,
        upstream=upstream.name,
        wire=target,
        mode=mode.value if lanes.followup is not None else Mode.OFF.value,
        forwarded_original=same,
    )
    exchange.lanes = lanes.header()
    exchange.sent = lanes.request
    forward = Forward(gateway, http, upstream, wire, target, exchange)
    forward.fallbacks = gateway.router.fallbacks(upstream)
    followup = lanes.followup
    # A lane that left the request as it came (hybrid before its first boundary) still has it
    # forwarded as the client's bytes, unless a fallback of another wire may have to serve it:
    # relayed bytes cannot be translated, the round loop's can.
    relayable = followup is None or (followup.untouched and not _cross_wire(forward))
    if same and relayable:
        finish = followup.finish if followup is not None else None
        return await relay.pass_through(
            forward, inbound.raw, client, ours, http.query_string, finish
        )
    turn = Turn(forward, client, ours, lanes.followup, http.query_string)
    if followup is not None and followup.handover is not None:
        turn.after_handover = _later_lanes(chosen, lanes.context, _keeper(gateway))
    turn.big = len(inbound.raw) >= jsonio.CUT_FROM
    if wire is Wire.RESPONSES and target is not wire and gateway.history is not None:
        turn.remember = functools.partial(
            gateway.history.keep, inbound.request, session=inbound.session.id
        )
    return await turn.serve(lanes.request)


def _cross_wire(forward: Forward) -> bool:
    """Whether a fallback of ``forward`` speaks another wire than its upstream."""
    return any(f.wire_for(forward.client_wire) is not forward.wire for f in forward.fallbacks)


async def _continue(history: ResponseHistory, inbound: Inbound) -> None:
    """Write out the conversation a ``previous_response_id`` names; the continuation keeps the
    session of what it continues unless the client named its own."""
    inbound.request, session = await history.expand(inbound.request)
    if session is not None and inbound.session.source == "fingerprint":
        inbound.session = SessionId(session, "previous-response")


def _later_lanes(
    chosen: list[Lane], context: LaneContext, keep: Keep | None
) -> Callable[[Request], Awaitable[Request]] | None:
    """The lanes after the state lane, run again on the request its handover round leads to;
    None when there are none."""
    names = [lane.name for lane in chosen]
    later = chosen[names.index("state") + 1 :] if "state" in names else []
    if not later:
        return None

    async def run(request: Request) -> Request:
        return (await run_lanes(later, request, context, keep)).request

    return run


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
    lanes: PipelineResult,
    headers: dict[str, str],
    mode: Mode,
) -> web.StreamResponse:
    answer = lanes.answer
    assert answer is not None
    kind = lanes.reports[-1].report.get("compaction")
    if kind:
        headers["x-skillstate-compaction"] = str(kind)
    started = time.perf_counter()
    out = await answer_locally(http, inbound.request, answer, headers)
    note = "compaction answered from the session state"
    session = (inbound.session.id, inbound.session.source)
    notify_local(
        gateway,
        inbound.request,
        session,
        answer,
        mode=mode.value,
        note=note,
        lanes=lanes.header(),
        started=started,
    )
    return out


def _no_upstream(
    gateway: GatewayContext, inbound: Inbound, headers: dict[str, str]
) -> web.Response:
    if not gateway.router.upstreams:
        message = "no upstream is configured; start the gateway with --upstream URL"
        return error_response(inbound.wire, 502, message, kind=ErrorKind.UPSTREAM, headers=headers)
    message = f"no configured upstream serves model {inbound.request.model!r}"
    return error_response(inbound.wire, 404, message, kind=ErrorKind.NOT_FOUND, headers=headers)
