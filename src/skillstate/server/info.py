"""The routes that are not generation: root probes, health, the model list, and Anthropic's
count_tokens (forwarded when the upstream speaks Anthropic, counted here else). Every upstream
call goes through ``Forward``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiohttp import web

from skillstate import __version__
from skillstate.conversation import Wire
from skillstate.economics.tokenizer import count_request, prime
from skillstate.protocols.anthropic_messages import count_tokens_body
from skillstate.protocols.logins import Login, login_of
from skillstate.server.context import GATEWAY, GatewayContext
from skillstate.server.errors import error_response, failure_response
from skillstate.server.forward import Forward
from skillstate.server.guard import bare_health
from skillstate.server.inbound import Refusal, read_inbound, session_headers, take_login
from skillstate.server.local_answers import answered
from skillstate.server.outbound import Outbound
from skillstate.server.replies import UpstreamFailure
from skillstate.server.tenancy import scope_of
from skillstate.storage.stores import Stores
from skillstate.support import jsonio
from skillstate.upstream.routing import Upstream

PROBE_TIMEOUT_S = 5.0
MODELS = "/v1/models"
MODELS_LISTED = "models_listed"
ANY_MODEL = "*"
"""The ``models`` pattern that matches every name."""


async def root(request: web.Request) -> web.Response:
    """Claude Code sends ``HEAD /`` before anything else; any 200 will do."""
    body = {"name": "skillstate", "version": __version__, "status": "ok"}
    return answered(request, web.json_response(body), "root")


async def health(request: web.Request) -> web.Response:
    gateway = request.app[GATEWAY]
    if scope_of(request, gateway) is not None:  # a tenant's key: nothing of the gateway's
        return answered(request, bare_health(), "health")
    store, redis, *checks = await asyncio.gather(
        store_report(gateway.stores),
        redis_report(gateway.redis),
        *(_probe(request, up) for up in gateway.router.upstreams),
    )
    ok = store["ok"] and redis.get("ok", True) and all(check["ok"] for check in checks)
    body = {
        "status": "ok" if ok else "degraded",
        "version": __version__,
        "upstreams": checks,
        "store": store,
        "redis": redis,
    }
    if gateway.audit is not None and gateway.audit.degraded is not None:
        body["status"] = "degraded"
        body["audit"] = {"ok": False, "degraded": gateway.audit.degraded}
    return answered(request, web.json_response(body, status=200), "health")


async def _probe(request: web.Request, upstream: Upstream) -> dict[str, Any]:
    wire = upstream.wire or Wire.CHAT
    forward = Forward(request.app[GATEWAY], request, upstream, wire, wire, client_headers={})
    started = time.perf_counter()
    report: dict[str, Any] = {"name": upstream.name, "base_url": upstream.base_url}
    report["wire"] = upstream.wire.value if upstream.wire else "auto"
    report.update(circuit_report(request.app[GATEWAY], upstream.name))
    try:
        probe = Outbound(MODELS, None, timeout=PROBE_TIMEOUT_S, probe=True)
        async with forward.send(probe) as reply:
            await reply.read()
            report["status"] = reply.status
            report["ok"] = True
    except UpstreamFailure as failure:
        # Reachable is what health means: a 401 without a key still shows a live provider.
        report["ok"] = failure.body is not None and failure.status < 500
        if failure.body is not None:
            report["status"] = failure.status
        else:
            report["error"] = failure.message
    report["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
    return report


async def store_report(stores: Stores | None) -> dict[str, Any]:
    """Where Σ and the archive are kept (``postgresql``, ``sqlite`` or ``memory``), whether
    that is where they were asked to be (``degraded``: why not), and for a shared database
    whether it answers now, its schema version and how long a query took."""
    if stores is None:
        return {"kind": "memory", "ok": True}
    report: dict[str, Any] = {"kind": stores.kind, "ok": stores.degraded is None}
    if stores.degraded:
        report["degraded"] = stores.degraded
    if unwritten := stores.unwritten_count:
        report["unwritten"] = unwritten  # a count: which ones, the log says
    if stores.shared is not None:
        started = time.perf_counter()
        try:
            version = await asyncio.wait_for(stores.shared.schema_version(), PROBE_TIMEOUT_S)
        except Exception as error:
            report.update(ok=False, error=f"{type(error).__name__}: {error}")
        else:
            report["schema_version"] = version
        report["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
    return report


async def redis_report(redis: Any) -> dict[str, Any]:
    """Whether the Redis the gateways share answers, and how fast (``{}`` where none is
    set)."""
    if redis is None:
        return {}
    started = time.perf_counter()
    report: dict[str, Any] = {"ok": True}
    try:
        await asyncio.wait_for(redis.ping(), PROBE_TIMEOUT_S)
    except Exception as error:
        report.update(ok=False, error=f"{type(error).__name__}: {error}")
    report["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
    return report


def circuit_report(gateway: GatewayContext, upstream: str) -> dict[str, Any]:
    """``circuit``: its state (``degraded``: closed, but passed over for a healthy fallback);
    ``circuit_window``: the calls and failures it judges by now, the tries and failed tries
    among them, and the seconds until an open circuit lets trials through."""
    circuit = gateway.circuit(upstream)
    calls, failed = circuit.counts()
    tries, failed_tries = circuit.tries()
    window = {
        "calls": calls,
        "failed": failed,
        "tries": tries,
        "failed_tries": failed_tries,
        "retry_in_s": round(circuit.retry_in(), 1),
    }
    return {"circuit": circuit.status, "circuit_window": window}


async def models(request: web.Request) -> web.StreamResponse:
    """The models some upstream serves, in the shape the caller reads (Anthropic's when it sent
    ``anthropic-version``, OpenAI's otherwise): of each upstream's list, the entries the
    routing sends to that upstream (a model its ``models`` patterns do not match, or that an
    earlier upstream's patterns claim, would be refused or served elsewhere, so it is left
    out). One upstream that takes every model, of the caller's wire family: its reply as it
    came. Else the entries merged, each kept whole, in upstream order; an entry crosses into
    the other family's shape only when it must."""
    gateway = request.app[GATEWAY]
    chatgpt = gateway.router.chatgpt
    if chatgpt is not None and login_of(request.headers) is Login.CHATGPT:
        return await _listed_by(request, chatgpt, Wire.RESPONSES)
    anthropic = "anthropic-version" in request.headers
    client_wire = Wire.MESSAGES if anthropic else Wire.CHAT
    upstreams = gateway.router.upstreams
    if (
        len(upstreams) == 1
        and ANY_MODEL in upstreams[0].models
        and _family(upstreams[0].wire_for(client_wire)) == anthropic
    ):
        return await _listed_by(request, upstreams[0], client_wire)
    lists = await asyncio.gather(
        *(_list_models(gateway, up, request, client_wire) for up in upstreams)
    )
    seen: dict[str, dict[str, Any]] = {}
    for upstream, (anthropic_entries, found) in zip(upstreams, lists, strict=True):
        for model in found:
            name = str(model.get("id"))
            if gateway.router.route(name) is not upstream:
                continue
            entry = model if anthropic_entries == anthropic else _crossed(model, anthropic)
            seen.setdefault(name, entry)
    listed = web.json_response(_model_list(list(seen.values()), anthropic))
    return answered(request, listed, MODELS_LISTED)


async def _listed_by(
    request: web.Request, upstream: Upstream, client_wire: Wire
) -> web.StreamResponse:
    """``upstream``'s own list, as it came. The ChatGPT backend's (for a ChatGPT login) is
    Codex's catalog, asked with Codex's query string (its version), from which Codex takes
    each model's metadata and instructions."""
    wire = upstream.wire_for(client_wire)
    forward = Forward(request.app[GATEWAY], request, upstream, client_wire, wire)
    outbound = Outbound(MODELS, None, request.query_string, timeout=PROBE_TIMEOUT_S)
    try:
        async with forward.send(outbound) as reply:
            body = await reply.read()
            headers = reply.headers
    except UpstreamFailure as failure:
        return failure_response(client_wire, failure, {})
    out = web.Response(status=reply.status, body=body, headers=headers)
    out.content_type = reply.raw.content_type or "application/json"
    return answered(request, out, MODELS_LISTED)


def _family(wire: Wire) -> bool:
    """Whether ``wire`` lists models in Anthropic's shape."""
    return wire is Wire.MESSAGES


async def _list_models(
    gateway: GatewayContext, upstream: Upstream, request: web.Request, client_wire: Wire
) -> tuple[bool, list[dict[str, Any]]]:
    wire = upstream.wire_for(client_wire)
    forward = Forward(gateway, request, upstream, client_wire, wire)
    try:
        async with forward.send(Outbound(MODELS, None, timeout=PROBE_TIMEOUT_S)) as reply:
            body = jsonio.loads(await reply.read())
    except (UpstreamFailure, ValueError):
        return _family(wire), []
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return _family(wire), []
    return _family(wire), [m for m in data if isinstance(m, dict) and "id" in m]


def _model_list(data: list[dict[str, Any]], anthropic: bool) -> dict[str, Any]:
    if anthropic:
        first = data[0]["id"] if data else None
        last = data[-1]["id"] if data else None
        return {"data": data, "has_more": False, "first_id": first, "last_id": last}
    return {"object": "list", "data": data}


def _crossed(model: dict[str, Any], anthropic: bool) -> dict[str, Any]:
    """An entry of one family in the other's shape (the fields each family's SDK requires)."""
    if anthropic:
        return {
            "type": "model",
            "id": model["id"],
            "display_name": model.get("display_name", model["id"]),
            "created_at": model.get("created_at", "1970-01-01T00:00:00Z"),
        }
    return {
        "id": model["id"],
        "object": "model",
        "created": model.get("created", 0),
        "owned_by": model.get("owned_by", "skillstate"),
    }


async def count_tokens(request: web.Request) -> web.StreamResponse:
    gateway = request.app[GATEWAY]
    try:
        inbound = await read_inbound(request, Wire.MESSAGES)
    except Refusal as refusal:
        out = error_response(Wire.MESSAGES, refusal.status, refusal.message, kind=refusal.kind)
        return answered(request, out, refusal.reason, refusal.message)
    upstream = take_login(inbound, request, gateway.router, Wire.MESSAGES)
    ours = session_headers(inbound, upstream)
    if upstream is not None and upstream.wire_for(Wire.MESSAGES) is Wire.MESSAGES:
        forward = Forward(
            gateway, request, upstream, Wire.MESSAGES, Wire.MESSAGES, login=inbound.login
        )
        outbound = Outbound("/v1/messages/count_tokens", inbound.raw, request.query_string)
        try:
            async with forward.send(outbound) as reply:
                body = await reply.read()
                ours.update(reply.headers)
            return web.Response(body=body, content_type="application/json", headers=ours)
        except UpstreamFailure as failure:
            if failure.body is not None:  # the upstream answered: its error is the answer
                return failure_response(Wire.MESSAGES, failure, ours)
            # an unreachable upstream still gets a local count below
    ours["x-skillstate-token-count"] = "local-o200k"
    await prime(inbound.request.messages)  # counted off the event loop
    counted = web.json_response(count_tokens_body(count_request(inbound.request)), headers=ours)
    return answered(request, counted, "tokens_counted")
