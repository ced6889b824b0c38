"""``GET /audit``: the audit log of admin actions read back (``server.admin`` records them).

``GET /audit`` answers ``{"audit": [{when, who, action, target, detail}, ...]}``, newest first
(``when`` in Unix seconds); ``since`` and ``until`` (ISO 8601, UTC unless a zone is named;
``since <= when < until``), ``action`` (exact) and ``limit`` (1 to ``MAX_LIMIT``, 100 when
absent) narrow it. Errors are the management routes' JSON (``state_routes.error_json``).
"""

from __future__ import annotations

from aiohttp import web

from skillstate.economics.ledger.report import parse_time
from skillstate.server.context import GATEWAY
from skillstate.server.state_routes import error_json
from skillstate.storage.audit import DEFAULT_LIMIT
from skillstate.support import jsonio

PATH = "/audit"
MAX_LIMIT = 10_000


def add_audit_routes(router: web.UrlDispatcher) -> None:
    router.add_get(PATH, audit)


async def audit(request: web.Request) -> web.Response:
    log = request.app[GATEWAY].audit
    if log is None:
        return error_json(503, "this gateway keeps no audit log")
    query = request.query
    try:
        since = parse_time(query["since"]) if "since" in query else None
        until = parse_time(query["until"]) if "until" in query else None
        limit = _limit(query.get("limit"))
    except ValueError as exc:
        return error_json(400, str(exc))
    found = await log.entries(since=since, until=until, action=query.get("action"), limit=limit)
    body = {"audit": [entry.to_json() for entry in found]}
    return web.Response(body=jsonio.dumps(body), content_type="application/json")


def _limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    if not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise ValueError(f"limit must be a whole number from 1 to {MAX_LIMIT}; got {text[:20]!r}")
    return int(text)
