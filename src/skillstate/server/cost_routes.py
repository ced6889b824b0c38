"""GET /cost (the ledger summed, JSON) and GET /metrics (Prometheus text). Both first wait for
the ledger to hold every request answered so far."""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from skillstate import jsonio
from skillstate.ledger import Filters, report
from skillstate.ledger.report import parse_time
from skillstate.server.context import GATEWAY
from skillstate.server.state_routes import error_json


def add_cost_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/cost", cost)
    router.add_get("/metrics", metrics)


async def cost(request: web.Request) -> web.Response:
    recorder = request.app[GATEWAY].recorder
    if recorder is None:
        return error_json(503, "this gateway keeps no ledger")
    try:
        filters = _filters(request.query)
    except ValueError as exc:
        return error_json(400, str(exc))
    await recorder.flush()
    body = await report(recorder.ledger, filters)
    return web.Response(body=jsonio.dumps(body), content_type="application/json")


async def metrics(request: web.Request) -> web.Response:
    recorder = request.app[GATEWAY].recorder
    if recorder is None:
        return error_json(503, "this gateway keeps no metrics")
    await recorder.flush()
    return web.Response(body=recorder.metrics.text(), headers={"content-type": CONTENT_TYPE_LATEST})


_KNOWN = {"session", "model", "since", "until"}


def _filters(query: Mapping[str, str]) -> Filters:
    unknown = sorted(set(query) - _KNOWN)
    if unknown:
        raise ValueError(f"unknown filter {unknown[0]!r}; use session, model, since, until")
    since = parse_time(query["since"]) if "since" in query else None
    until = parse_time(query["until"]) if "until" in query else None
    if since is not None and until is not None and until <= since:
        raise ValueError("until must be later than since")
    return Filters(query.get("session"), query.get("model"), since, until)
