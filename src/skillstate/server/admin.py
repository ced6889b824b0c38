"""Who took an admin action, and its record in the audit log (``storage.audit``).

Who is the credential the request passed the guard with (``server.guard``): an admin's virtual
key as ``key:<id>``; else ``token`` where the gateway has one (then every request carried it,
or the dashboard's cookie made from it); else ``loopback`` (a local program: without a token
the gateway listens on loopback only). The client's address goes in the entry's ``detail``.
"""

from __future__ import annotations

from aiohttp import web

from skillstate.conversation import Json
from skillstate.server.context import GATEWAY
from skillstate.server.guard import CALLER


def credential(request: web.Request) -> str:
    """Who the request is, as the audit log names it: ``key:<id>``, ``token`` or
    ``loopback``."""
    key = request.get(CALLER)
    if key is not None:
        return f"key:{key.id}"
    settings = request.app[GATEWAY].settings
    return "token" if settings is not None and settings.auth_token is not None else "loopback"


async def audited(
    request: web.Request, action: str, target: str, detail: Json | None = None
) -> None:
    """Record ``action`` on ``target`` in the gateway's audit log (where it keeps one), by
    the request's credential, with its client's address. Never fails the request
    (``AuditLog.record``)."""
    log = request.app[GATEWAY].audit
    if log is not None:
        await log.record(
            credential(request), action, target, {"client": request.remote, **(detail or {})}
        )
