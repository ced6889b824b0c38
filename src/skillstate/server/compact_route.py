"""``POST /v1/responses/compact``: the Responses API's compaction endpoint.

Older Codex versions (before remote compaction moved onto ``/v1/responses``) and the openai
SDK's ``responses.compact`` call it with a Responses body (``model``, ``input``,
``instructions``...) and read back ``{"object": "response.compaction", "output": [...]}``,
the user messages followed by one compaction item, as the history to continue from. The
gateway answers it from Σ when the session's Σ has content; otherwise it forwards the request
to an upstream that speaks Responses, and refuses clearly when the upstream speaks another
wire (no other provider has this endpoint).
"""

from __future__ import annotations

import logging
import time
import uuid

from aiohttp import web

from skillstate.conversation import ErrorKind, Message, Response, Usage, Wire
from skillstate.economics.tokenizer import count_tokens
from skillstate.pipeline.compaction_lane import summary_for
from skillstate.protocols import adapter
from skillstate.protocols.openai_responses.compaction import (
    compacted_body,
    compaction_id,
    summary_item,
    summary_part,
    unwrap_summaries,
    user_items,
)
from skillstate.server.context import GATEWAY, GatewayContext
from skillstate.server.errors import error_response, failure_response
from skillstate.server.exchanges import notify_local
from skillstate.server.forward import Forward
from skillstate.server.inbound import (
    Inbound,
    Refusal,
    read_inbound,
    request_mode,
    session_headers,
    take_login,
)
from skillstate.server.local_answers import answered
from skillstate.server.outbound import Outbound
from skillstate.server.replies import Reply, UpstreamFailure, reply_cut_short
from skillstate.state.mode import Mode
from skillstate.support import jsonio

log = logging.getLogger("skillstate.compaction")

PATH = "/v1/responses/compact"
WIRE = Wire.RESPONSES


async def handle_compact(request: web.Request) -> web.StreamResponse:
    gateway = request.app[GATEWAY]
    try:
        inbound = await read_inbound(request, WIRE)
    except Refusal as refusal:
        out = error_response(WIRE, refusal.status, refusal.message, kind=refusal.kind)
        return answered(request, out, refusal.reason, refusal.message)
    upstream = take_login(inbound, request, gateway.router, WIRE)
    ours = session_headers(inbound, upstream)
    engine = gateway.engine
    mode = request_mode(request, gateway.mode)
    if engine is not None and mode is not Mode.OFF:
        if (unwrapped := unwrap_summaries(inbound.request)) is not None:
            inbound.request = unwrapped
            inbound.raw = jsonio.dumps(adapter(WIRE).encode_request(unwrapped))
        started = time.perf_counter()
        summary = await summary_for(engine, inbound.session.id, inbound.request, None)
        if summary is not None:
            return _answer(gateway, inbound, summary, ours, mode, started)
    if upstream is None:
        message = f"no configured upstream serves model {inbound.request.model!r}"
        out = error_response(WIRE, 404, message, kind=ErrorKind.NOT_FOUND, headers=ours)
        return answered(request, out, "model_not_served", message)
    target = upstream.wire_for(WIRE)
    if target is not WIRE:
        message = (
            f"{PATH} needs an upstream that speaks {WIRE.value} (upstream {upstream.name!r} "
            f"speaks {target.value}), or a session state to answer from: this session has none"
        )
        out = error_response(WIRE, 501, message, kind=ErrorKind.INVALID_REQUEST, headers=ours)
        return answered(request, out, "wire_not_supported", message)
    forward = Forward(gateway, request, upstream, WIRE, WIRE, login=inbound.login)
    outbound = Outbound(PATH, inbound.raw, request.query_string, settle=_whole_compaction)
    try:
        async with forward.send(outbound) as reply:
            body = await reply.read()
            ours.update(reply.headers)
    except UpstreamFailure as failure:
        return failure_response(WIRE, failure, ours)
    out = web.Response(status=reply.status, body=body, headers=ours)
    out.content_type = reply.raw.content_type or "application/json"
    return out


async def _whole_compaction(reply: Reply) -> None:
    """``Outbound.settle``: the upstream's compaction read whole within the tries: a JSON
    object with its ``output`` list, else a reply cut short (tried again; never passed on)."""
    raw = await reply.read()
    try:
        body = jsonio.loads(raw)
    except ValueError as exc:
        raise reply_cut_short(reply, f"the JSON body does not parse whole: {exc}") from exc
    if not isinstance(body, dict) or not isinstance(body.get("output"), list):
        raise reply_cut_short(reply, "not a compaction: no output list")


def _answer(
    gateway: GatewayContext,
    inbound: Inbound,
    summary: str,
    headers: dict[str, str],
    mode: Mode,
    started: float,
) -> web.Response:
    """The compacted history: the user messages as sent, then the summary's item."""
    token = uuid.uuid4().hex
    usage = Usage(output=count_tokens(summary))
    model = inbound.request.model
    item = summary_item(summary, compaction_id(token))
    output = [*user_items(inbound.body), item]
    response_id = adapter(WIRE).response_id(token)
    body = compacted_body(response_id, int(time.time()), model, output, usage)
    log.info("session %s: compaction answered from the state", inbound.session.id)
    message = Message("assistant", [summary_part(summary, item["id"])])
    response = Response(response_id, model, message, WIRE, usage=usage)
    session = (inbound.session.id, inbound.session.source)
    note = "compaction answered from the session state"
    notify_local(
        gateway,
        inbound.request,
        session,
        response,
        mode=mode,
        note=note,
        started=started,
        login=inbound.login,
    )
    ours = {**headers, "x-skillstate-compaction": "responses-compact"}
    return web.Response(
        status=200, body=jsonio.dumps(body), headers=ours, content_type="application/json"
    )
