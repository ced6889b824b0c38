"""The routes that are not generation: root probes, health, the merged model list, and
Anthropic's count_tokens (forwarded when the upstream speaks Anthropic, counted here else)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
from aiohttp import web

from skillstate import __version__, jsonio
from skillstate.conversation import Wire
from skillstate.economics.tokenizer import count_request
from skillstate.protocols.anthropic_messages import count_tokens_body
from skillstate.protocols.headers import upstream_headers
from skillstate.server.context import GATEWAY, GatewayContext
from skillstate.server.errors import error_response
from skillstate.server.proxy import Refusal, read_inbound, session_headers
from skillstate.server.relay import relay_upstream_error
from skillstate.upstream.routing import Upstream

PROBE_TIMEOUT_S = 5.0


async def root(request: web.Request) -> web.Response:
    """Claude Code sends ``HEAD /`` before anything else; any 200 will do."""
    return web.json_response({"name": "skillstate", "version": __version__, "status": "ok"})


async def health(request: web.Request) -> web.Response:
    gateway = request.app[GATEWAY]
    checks = await asyncio.gather(*(_probe(gateway, up) for up in gateway.router.upstreams))
    ok = all(check["ok"] for check in checks)
    body = {"status": "ok" if ok else "degraded", "version": __version__, "upstreams": checks}
    return web.json_response(body, status=200)


async def _probe(gateway: GatewayContext, upstream: Upstream) -> dict[str, Any]:
    wire = upstream.wire or Wire.CHAT
    headers = upstream_headers({}, client_wire=wire, upstream_wire=wire, api_key=upstream.api_key)
    started = time.perf_counter()
    report: dict[str, Any] = {"name": upstream.name, "base_url": upstream.base_url}
    report["wire"] = upstream.wire.value if upstream.wire else "auto"
    try:
        async with gateway.client.get(
            upstream.url("/v1/models"), headers, timeout=PROBE_TIMEOUT_S
        ) as reply:
            await reply.read()
            report["status"] = reply.status
            # Reachable is what health means: a 401 without a key still shows a live provider.
            report["ok"] = reply.status < 500
    except (aiohttp.ClientError, TimeoutError) as exc:
        report["ok"] = False
        report["error"] = f"{type(exc).__name__}: {exc}"
    report["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
    return report


async def models(request: web.Request) -> web.Response:
    """Every upstream's models, merged (first upstream wins a duplicate id), in the shape the
    caller reads: Anthropic's when it sent ``anthropic-version``, OpenAI's otherwise."""
    gateway = request.app[GATEWAY]
    anthropic = "anthropic-version" in request.headers
    client_wire = Wire.MESSAGES if anthropic else Wire.CHAT
    lists = await asyncio.gather(
        *(_list_models(gateway, up, request, client_wire) for up in gateway.router.upstreams)
    )
    seen: dict[str, dict[str, Any]] = {}
    for found in lists:
        for model in found:
            seen.setdefault(str(model.get("id")), model)
    data = [_model_entry(model, anthropic) for model in seen.values()]
    if anthropic:
        first = data[0]["id"] if data else None
        last = data[-1]["id"] if data else None
        body: dict[str, Any] = {"data": data, "has_more": False, "first_id": first, "last_id": last}
    else:
        body = {"object": "list", "data": data}
    return web.json_response(body)


async def _list_models(
    gateway: GatewayContext, upstream: Upstream, request: web.Request, client_wire: Wire
) -> list[dict[str, Any]]:
    wire = upstream.wire_for(client_wire)
    headers = upstream_headers(
        request.headers,
        client_wire=client_wire,
        upstream_wire=wire,
        api_key=upstream.api_key,
        extra=upstream.headers,
    )
    headers.pop("content-type", None)
    try:
        async with gateway.client.get(
            upstream.url("/v1/models"), headers, timeout=PROBE_TIMEOUT_S
        ) as reply:
            if reply.status >= 400:
                return []
            body = jsonio.loads(await reply.read())
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return []
    data = body.get("data") if isinstance(body, dict) else None
    return [m for m in data if isinstance(m, dict) and "id" in m] if isinstance(data, list) else []


def _model_entry(model: dict[str, Any], anthropic: bool) -> dict[str, Any]:
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
        return error_response(Wire.MESSAGES, refusal.status, refusal.message, kind=refusal.kind)
    upstream = gateway.router.route(inbound.request.model)
    ours = session_headers(inbound, upstream)
    if upstream is not None and upstream.wire_for(Wire.MESSAGES) is Wire.MESSAGES:
        headers = upstream_headers(
            request.headers,
            client_wire=Wire.MESSAGES,
            upstream_wire=Wire.MESSAGES,
            api_key=upstream.api_key,
            extra=upstream.headers,
        )
        url = upstream.url("/v1/messages/count_tokens")
        if request.query_string:
            url += "?" + request.query_string
        try:
            async with gateway.client.post(url, inbound.raw, headers) as reply:
                if reply.status >= 400:
                    return await relay_upstream_error(
                        request, reply, Wire.MESSAGES, Wire.MESSAGES, ours
                    )
                body = await reply.read()
                return web.Response(body=body, content_type="application/json", headers=ours)
        except (aiohttp.ClientError, TimeoutError):
            pass  # an unreachable upstream still gets a local count below
    ours["x-skillstate-token-count"] = "local-o200k"
    return web.json_response(count_tokens_body(count_request(inbound.request)), headers=ours)
