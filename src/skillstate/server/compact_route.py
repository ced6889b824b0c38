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

import aiohttp
from aiohttp import web

from skillstate import jsonio
from skillstate.conversation import ErrorKind, Message, Response, Usage, Wire
from skillstate.economics.tokenizer import count_tokens
from skillstate.exchange import Exchange
from skillstate.protocols import adapter
from skillstate.protocols.headers import response_headers, upstream_headers
from skillstate.protocols.openai_responses.compaction import (
    compacted_body,
    compaction_id,
    summary_item,
    summary_part,
    user_items,
)
from skillstate.server.compaction import UPSTREAM, notify, summary_for, unwrap
from skillstate.server.context import GATEWAY, GatewayContext
from skillstate.server.errors import error_response
from skillstate.server.proxy import Inbound, Refusal, read_inbound, request_mode, session_headers

log = logging.getLogger("skillstate.compaction")

PATH = "/v1/responses/compact"
WIRE = Wire.RESPONSES


async def handle_compact(request: web.Request) -> web.StreamResponse:
    gateway = request.app[GATEWAY]
    try:
        inbound = await read_inbound(request, WIRE)
    except Refusal as refusal:
        return error_response(WIRE, refusal.status, refusal.message, kind=refusal.kind)
    upstream = gateway.router.route(inbound.request.model)
    ours = session_headers(inbound, upstream)
    engine = gateway.engine
    if engine is not None and request_mode(request, gateway.mode) != "off":
        if (unwrapped := unwrap(inbound.request)) is not None:
            inbound.request, inbound.raw = unwrapped
        started = time.perf_counter()
        summary = await summary_for(engine, inbound.session.id, inbound.request, None)
        if summary is not None:
            return _answer(gateway, inbound, summary, ours, started)
    if upstream is None:
        message = f"no configured upstream serves model {inbound.request.model!r}"
        return error_response(WIRE, 404, message, kind=ErrorKind.NOT_FOUND, headers=ours)
    target = upstream.wire_for(WIRE)
    if target is not WIRE:
        message = (
            f"{PATH} needs an upstream that speaks {WIRE.value} (upstream {upstream.name!r} "
            f"speaks {target.value}), or a session state to answer from: this session has none"
        )
        return error_response(WIRE, 501, message, kind=ErrorKind.INVALID_REQUEST, headers=ours)
    headers = upstream_headers(
        request.headers,
        client_wire=WIRE,
        upstream_wire=WIRE,
        api_key=upstream.api_key,
        extra=upstream.headers,
    )
    return await _forward(request, inbound, upstream.url(PATH), headers, ours, upstream.name)


def _answer(
    gateway: GatewayContext,
    inbound: Inbound,
    summary: str,
    headers: dict[str, str],
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
    notify(gateway, _exchange(inbound, response, started))
    ours = {**headers, "x-skillstate-compaction": "responses-compact"}
    return web.Response(
        status=200, body=jsonio.dumps(body), headers=ours, content_type="application/json"
    )


def _exchange(inbound: Inbound, response: Response, started: float) -> Exchange:
    return Exchange(
        session=inbound.session.id,
        session_source=inbound.session.source,
        client_wire=WIRE,
        upstream_wire=WIRE,
        upstream=UPSTREAM,
        request=inbound.request,
        response=response,
        status=200,
        streamed=False,
        forwarded_original=False,
        elapsed_s=time.perf_counter() - started,
        started=started,
        note="compaction answered from the session state",
    )


async def _forward(
    request: web.Request,
    inbound: Inbound,
    url: str,
    headers: dict[str, str],
    ours: dict[str, str],
    name: str,
) -> web.StreamResponse:
    """The request as it came (or with the gateway's items unwrapped), the reply as it comes."""
    gateway = request.app[GATEWAY]
    try:
        async with gateway.client.post(url, inbound.raw, headers) as reply:
            raw = await reply.read()
            ours.update(response_headers(reply.headers, same_wire=True))
            out = web.Response(status=reply.status, body=raw, headers=ours)
            out.content_type = reply.content_type or "application/json"
            return out
    except (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError) as exc:
        message = f"upstream {name!r} is unreachable: {exc}"
        return error_response(WIRE, 502, message, kind=ErrorKind.UPSTREAM, headers=ours)
    except TimeoutError:
        message = f"upstream {name!r} did not answer in time"
        return error_response(WIRE, 504, message, kind=ErrorKind.TIMEOUT, headers=ours)
