"""GET /cost (the ledger summed, JSON), GET /cost/requests (its newest rows, JSON) and GET
/metrics (Prometheus text). Each first waits for the ledger to hold every request answered so
far.

``GET /cost/requests?limit=N`` answers ``{"label", "requests": [row, ...]}``, newest first, each
row with the fields of ``ledger.Row`` (times in Unix seconds); ``limit`` is 1 to
``LATEST_LIMIT`` (50 when absent), and the filters of /cost apply.

A tenant's key (``server.tenancy``) is answered from its own sessions' rows only (its
``session`` filter names its own session, ``ID`` or ``<tenant>/ID``), and /metrics shows it its
own series only (``skillstate_tenant_*`` with its ``tenant`` label)."""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from skillstate.economics.catalog_age import catalog_age
from skillstate.economics.ledger import Filters, report
from skillstate.economics.ledger.report import LABEL, LATEST_LIMIT, latest, parse_time
from skillstate.economics.prices import builtin_catalog
from skillstate.server.context import GATEWAY
from skillstate.server.state_routes import error_json
from skillstate.server.tenancy import scope_of
from skillstate.storage.tenants import NAMED_RULE, named, valid_named
from skillstate.support import jsonio


def add_cost_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/cost", cost)
    router.add_get("/cost/requests", requests)
    router.add_get("/metrics", metrics)


async def cost(request: web.Request) -> web.Response:
    recorder = request.app[GATEWAY].recorder
    if recorder is None:
        return error_json(503, "this gateway keeps no ledger")
    try:
        filters = _filters(request.query, scope_of(request, request.app[GATEWAY]))
    except ValueError as exc:
        return error_json(400, str(exc))
    await recorder.flush()
    catalog = catalog_age(builtin_catalog().as_of, recorder.today())
    body = await report(recorder.ledger, filters, catalog=catalog)
    return web.Response(body=jsonio.dumps(body), content_type="application/json")


async def requests(request: web.Request) -> web.Response:
    recorder = request.app[GATEWAY].recorder
    if recorder is None:
        return error_json(503, "this gateway keeps no ledger")
    query = dict(request.query)
    try:
        limit = _limit(query.pop("limit", None))
        scope = scope_of(request, request.app[GATEWAY])
        filters = _filters(query, scope, hint="limit, session, model, since, until")
    except ValueError as exc:
        return error_json(400, str(exc))
    await recorder.flush()
    rows = await latest(recorder.ledger, limit, filters)
    body = {"label": LABEL, "requests": rows}
    return web.Response(body=jsonio.dumps(body), content_type="application/json")


async def metrics(request: web.Request) -> web.Response:
    recorder = request.app[GATEWAY].recorder
    if recorder is None:
        return error_json(503, "this gateway keeps no metrics")
    await recorder.flush()
    gateway = request.app[GATEWAY]
    scope = scope_of(request, gateway)
    if scope is not None:
        body = recorder.metrics.tenant_text(scope)
        return web.Response(body=body, headers={"content-type": CONTENT_TYPE_LATEST})
    for upstream in gateway.router.upstreams:
        recorder.metrics.circuit(upstream.name, gateway.circuit(upstream.name).status)
    return web.Response(body=recorder.metrics.text(), headers={"content-type": CONTENT_TYPE_LATEST})


_KNOWN = {"session", "model", "since", "until"}


_DEFAULT_LIMIT = 50


def _limit(text: str | None) -> int:
    if text is None:
        return _DEFAULT_LIMIT
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= LATEST_LIMIT:
        raise ValueError(
            f"limit must be a whole number from 1 to {LATEST_LIMIT}; got {text[:40]!r}"
        )
    return int(text)


def _filters(
    query: Mapping[str, str], scope: str | None, hint: str = "session, model, since, until"
) -> Filters:
    """The filters ``query`` asks for, within ``scope``'s rows."""
    unknown = sorted(set(query) - _KNOWN)
    if unknown:
        raise ValueError(f"unknown filter {unknown[0]!r}; use {hint}")
    session = query.get("session")
    if session is not None:
        if not valid_named(session):
            raise ValueError(f"session must be {NAMED_RULE}; got {session[:80]!r}")
        session = named(scope, session)
    since = parse_time(query["since"]) if "since" in query else None
    until = parse_time(query["until"]) if "until" in query else None
    if since is not None and until is not None and until <= since:
        raise ValueError("until must be later than since")
    return Filters(session, query.get("model"), since, until, tenant=scope)
