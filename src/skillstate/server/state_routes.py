"""The state routes: managing the sessions the state engine keeps, for ``skillstate state``.

* ``GET /state`` lists the sessions with a committed Σ (a tenant's key: its own), most
  recently seen first:
  ``{"sessions": [{session, step, version, state_bytes, last_seen, created}, ...]}`` (times
  are the store clock's seconds since the epoch).
* ``GET /state?session=ID`` describes one session: Σ, its step and version, the measured
  context of its last request, the verbatim window, the per-turn index of what was collapsed
  and what is verbatim, the epoch and the archive refs (``state.description`` has the keys).
* ``DELETE /state?session=ID`` resets it: Σ, its epoch and last-request documents and its
  archive index are forgotten (the archived spans stay until evicted). The next request of the
  session starts afresh.
* ``POST /state/collapse?session=ID`` forces an epoch boundary on the session's next request
  (answered 202: it happens then, not now).

A reset and a collapse are recorded in the audit log (``server.admin``: who, when, the
session).

A tenant's key (``server.tenancy``) sees and changes its own sessions only, named as ``ID``
or ``<tenant>/ID``; another tenant's session is answered as one that does not exist.

Every error is ``{"error": {"message", "type"}}``, ``type`` an ``ErrorKind``: a missing or
invalid session id is 400 ``invalid-request`` (ids follow ``server.sessions``' rule, or are
``<tenant>/<id>``), a session with no committed state (or not the caller's) 404 ``not-found``,
a gateway without a state engine 503 ``upstream-error``.

These are local management routes, not part of any provider's API, and they expose state
content: Σ holds what the agent learned (file paths, findings, errors, commands), and they can
reset it. ``server.guard`` admits every request first: on 127.0.0.1 (the default) they answer
local programs but no web page (Host and Origin checks); another address needs the gateway's
token, which every route then wants.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from skillstate.conversation import ErrorKind, Json
from skillstate.protocols import kind_for_status
from skillstate.server.admin import audited
from skillstate.server.context import GATEWAY
from skillstate.server.local_answers import answered, reason_for
from skillstate.server.tenancy import scope_of
from skillstate.state.engine import StateEngine
from skillstate.storage.tenants import NAMED_RULE, named, owns, valid_named
from skillstate.support import jsonio

PATH = "/state"
COLLAPSE_PATH = "/state/collapse"

#: The fields of a ``GET /state`` line, in the order the CLI shows them.
LISTED = ("session", "step", "version", "state_bytes", "last_seen", "created")


class _Problem(Exception):
    """A request these routes refuse, answered as a JSON error."""

    def __init__(self, status: int, message: str, kind: ErrorKind | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind or kind_for_status(status)


Handler = Callable[[web.Request], Awaitable[web.Response]]


def add_state_routes(router: web.UrlDispatcher) -> None:
    """Register the state routes (aiohttp answers HEAD for the GET route too)."""
    router.add_get(PATH, _guarded(_get))
    router.add_delete(PATH, _guarded(_delete))
    router.add_post(COLLAPSE_PATH, _guarded(_collapse))


def _guarded(handler: Handler) -> Handler:
    async def guarded(request: web.Request) -> web.Response:
        try:
            return await handler(request)
        except _Problem as problem:
            out = error_json(problem.status, problem.message, problem.kind)
            return answered(request, out, reason_for(problem.status, problem.kind), problem.message)

    guarded.__name__ = f"state{handler.__name__}"
    return guarded


async def _get(request: web.Request) -> web.Response:
    engine = _engine(request)
    if "session" not in request.query:
        scope = scope_of(request, request.app[GATEWAY])
        sessions = await engine.store.list_sessions()
        lines = [
            {key: getattr(info, key) for key in LISTED}
            for info in sessions
            if owns(scope, info.session)
        ]
        return _json({"sessions": lines})
    session = _session(request)
    description = await engine.describe(session)
    if description is None:
        raise _unknown(session)
    return _json(description)


async def _delete(request: web.Request) -> web.Response:
    engine = _engine(request)
    session = _session(request)
    had_state, forgotten = await engine.reset(session)
    if not had_state and not forgotten:
        raise _unknown(session)
    await audited(request, "session.reset", session, {"archive_entries_forgotten": forgotten})
    return _json({"session": session, "reset": True, "archive_entries_forgotten": forgotten})


async def _collapse(request: web.Request) -> web.Response:
    engine = _engine(request)
    session = _session(request)
    # request_collapse writes a record; a session that has none would be created by it.
    if not any(info.session == session for info in await engine.store.list_sessions()):
        raise _unknown(session)
    await engine.request_collapse(session)
    await audited(request, "session.collapse", session)
    return _json({"session": session, "collapse": "on the next request"}, status=202)


def _engine(request: web.Request) -> StateEngine:
    engine = request.app[GATEWAY].engine
    if engine is None:
        raise _Problem(503, "this gateway runs without a state engine", ErrorKind.UPSTREAM)
    return engine


def _session(request: web.Request) -> str:
    """The session the query names, one the caller owns (``server.tenancy``): another
    tenant's is unknown here, as one that does not exist."""
    text = request.query.get("session")
    if text is None:
        raise _Problem(400, "name the session: ?session=ID")
    if not valid_named(text):
        raise _Problem(400, f"session must be {NAMED_RULE}; got {text[:80]!r}")
    scope = scope_of(request, request.app[GATEWAY])
    session = named(scope, text)
    if not owns(scope, session):
        raise _unknown(text)
    return session


def _unknown(session: str) -> _Problem:
    return _Problem(404, f"no session {session!r} has a state here")


def _json(body: Json, *, status: int = 200) -> web.Response:
    # jsonio keeps integers of any size exact: Σ may hold numbers JavaScript cannot.
    return web.Response(status=status, body=jsonio.dumps(body), content_type="application/json")


def error_json(status: int, message: str, kind: ErrorKind | None = None) -> web.Response:
    """``{"error": {"message", "type"}}``: the error shape of the management routes."""
    error = {"message": message, "type": kind or kind_for_status(status)}
    return _json({"error": error}, status=status)
