"""A client's request as it arrives: read, checked, decoded, its session resolved, its mode
chosen. Every failure is a ``Refusal`` naming what was wrong."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from skillstate.conversation import ErrorKind, Message, ProtocolError, Request, ToolResult, Wire
from skillstate.conversation.prefixes import PrefixMemo
from skillstate.pipeline.lane import Lane
from skillstate.pipeline.switches import parse_names
from skillstate.protocols import adapter
from skillstate.protocols.logins import Login, login_of
from skillstate.protocols.memo import SessionMemos
from skillstate.server import route
from skillstate.server.client_stream import FRAMING
from skillstate.server.context import GATEWAY, LaneHeaders
from skillstate.server.guard import caller_of, tenant_of
from skillstate.server.local_answers import reason_for
from skillstate.server.sessions import SessionId, resolve_session
from skillstate.state.mode import Mode
from skillstate.storage.keys import VirtualKey
from skillstate.support import jsonio
from skillstate.upstream.routing import Router, Upstream

BYPASS = "x-skillstate-bypass"
LANES = "x-skillstate-lanes"
JSON_TYPE = "application/json"
MODE = "x-skillstate-mode"

log = logging.getLogger("skillstate.server")

FRAMED: web.RequestKey[bytes] = web.RequestKey("framed", bytes)
"""Request key of a request that came as a WebSocket frame: its body (``server.socket_route``)."""
_INVALID_JSON = "invalid_json"
_INVALID_HEADER = "invalid_header"


@dataclass(slots=True)
class Inbound:
    """A decoded client request, ready to forward."""

    wire: Wire
    raw: bytes
    body: dict[str, Any]
    request: Request
    session: SessionId
    login: Login = Login.NONE
    """The kind of credential the request carries (``take_login``), once its upstream is
    known."""


class Refusal(Exception):
    """A request the gateway answers itself with an error in the client's wire; ``reason``
    names the cause in the log and ``/metrics`` (``local_answers``; by default the status's)."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: ErrorKind | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.reason = reason or reason_for(status, kind)


async def read_inbound(request: web.Request, wire: Wire) -> Inbound:
    """Read and validate the body; every failure is a ``Refusal`` naming what was wrong."""
    raw, body = await read_body(request, wire)
    return decode_inbound(request, wire, raw, body)


async def read_body(request: web.Request, wire: Wire) -> tuple[bytes, dict[str, Any]]:
    """The body as it came and as parsed: a JSON object of at most ``max_body_bytes``, in
    within ``body_timeout``; else a ``Refusal`` naming what was wrong."""
    check_json_type(request)
    gateway = request.app[GATEWAY]
    framed = request.get(FRAMED) if FRAMING.now else None
    try:
        if framed is not None:  # the body came as a WebSocket frame (``server.socket_route``)
            if len(framed) > gateway.max_body_bytes:
                raise web.HTTPRequestEntityTooLarge(gateway.max_body_bytes, len(framed))
            raw = framed
        elif request.content.is_eof():  # all of it came with the head: nothing to wait for
            raw = await request.read()
        else:
            async with asyncio.timeout(gateway.body_timeout):
                raw = await request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        limit = gateway.max_body_bytes
        message = (
            f"request body is over this gateway's limit of {limit:,} bytes (max_body_bytes); "
            "raise max_body_bytes (SKILLSTATE_MAX_BODY_BYTES) to accept larger bodies"
        )
        raise Refusal(413, message, ErrorKind.TOO_LARGE) from exc
    except TimeoutError as exc:
        # A body that trickles in holds a connection and a buffer: a denial of service.
        message = f"request body did not arrive within {gateway.body_timeout:g} s"
        raise Refusal(408, message) from exc
    if not raw:
        raise Refusal(400, "request body is empty; expected a JSON object", reason="empty_body")
    try:
        body = await gateway.bodies.read(raw, adapter(wire).history_key)
    except jsonio.TooDeep as exc:
        raise Refusal(400, f"request body {exc}", reason=_INVALID_JSON) from exc
    except ValueError as exc:
        message = f"request body is not valid JSON: {exc}"
        raise Refusal(400, message, reason=_INVALID_JSON) from exc
    if not isinstance(body, dict):
        message = f"request body must be a JSON object, not {type(body).__name__}"
        raise Refusal(400, message, reason=_INVALID_JSON)
    return raw, body


def decode_inbound(request: web.Request, wire: Wire, raw: bytes, body: dict[str, Any]) -> Inbound:
    """The request ``body`` holds, decoded, its session resolved and the gateway's limits on
    its size checked; a ``Refusal`` where it is not a valid request of ``wire``."""
    gateway = request.app[GATEWAY]
    caller = caller_of(request, gateway)
    decoded, session = _decode(request, wire, body, gateway.memos, len(raw), caller)
    _check_counts(decoded, gateway.max_messages, gateway.max_parts)
    if caller is not None and not caller.allows(decoded.model):
        message = f"this key may not use the model {decoded.model!r}"
        raise Refusal(403, message, ErrorKind.PERMISSION, reason="model_not_allowed")
    decoded.received = int(time.time())  # dates a reply from a wire that gives no time
    return Inbound(wire, raw, body, decoded, session)


def _decode(
    request: web.Request,
    wire: Wire,
    body: dict[str, Any],
    memos: SessionMemos,
    size: int,
    caller: VirtualKey | None,
) -> tuple[Request, SessionId]:
    """The canonical request and its session. The session's previous messages are not
    decoded again (``protocols.memo``)."""
    try:
        session = _session(request, wire, body, tenant_of(caller))
        key = f"{wire.value}:{session.id}"
        memo = memos.get(key)
        memo.start()
        try:
            decoded = adapter(wire).decode_request(body, memo)
        except BaseException:
            memo.abort()
            raise
        memos.finish(key, memo, size)
    except ProtocolError as exc:
        raise Refusal(exc.status, exc.message) from exc
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        # An adapter check that is missing: still the client's malformed body, so a 400 in
        # its wire, and logged so that the check gets written.
        log.warning("%s body the adapter did not check", wire.value, exc_info=True)
        message = f"request body is not a valid {wire.value} request ({type(exc).__name__})"
        raise Refusal(400, message) from exc
    return decoded, session


def _session(
    request: web.Request, wire: Wire, body: dict[str, Any], tenant: str | None
) -> SessionId:
    """The request's session, read before the body is decoded; a body too malformed to read
    it from is refused by the adapter first, in its own words."""
    try:
        return resolve_session(request.headers, body, wire, tenant)
    except (ProtocolError, TypeError, ValueError, KeyError, IndexError, AttributeError):
        adapter(wire).decode_request(body)
        raise


def _check_counts(decoded: Request, max_messages: int, max_parts: int) -> None:
    """The ``max_messages`` and ``max_parts`` limits. Parts are the system prompt's parts,
    each message's parts, and the items of each tool result."""
    if len(decoded.messages) > max_messages:
        raise Refusal(
            400,
            f"request has {len(decoded.messages):,} messages; "
            f"this gateway accepts at most {max_messages:,} (max_messages)",
            reason="too_many_messages",
        )
    parts = len(decoded.system) + _parts(decoded.messages)
    if parts > max_parts:
        raise Refusal(
            400,
            f"request has {parts:,} content parts; "
            f"this gateway accepts at most {max_parts:,} (max_parts)",
            reason="too_many_parts",
        )


def _parts(messages: list[Message]) -> int:
    """Each message's parts and the items of each tool result; a re-sent history's count is
    taken up where it was left (``PrefixMemo``)."""
    found = _counted_parts.find(messages)
    done, parts = (0, 0) if found is None else found
    for message in messages[done:]:
        parts += len(message.parts)
        for part in message.parts:
            if isinstance(part, ToolResult):
                parts += len(part.content)
    if len(messages) > done:
        _counted_parts.keep(messages, parts)
    return parts


_counted_parts: PrefixMemo[int] = PrefixMemo()


def check_json_type(request: web.Request) -> None:
    """Only ``application/json`` bodies: a browser page can send ``text/plain``, a form or a
    typeless body to any address without asking (a CORS "simple request"), never JSON."""
    given = request.headers.get("Content-Type")
    if given == JSON_TYPE:
        return  # what clients send: nothing to parse
    if given is None or request.content_type != JSON_TYPE:
        shown = "none" if given is None else repr(given)
        raise Refusal(415, f"Content-Type must be {JSON_TYPE} (got {shown})")


def take_login(
    inbound: Inbound, request: web.Request, router: Router, wire: Wire
) -> Upstream | None:
    """Tell the request's login once, choose its upstream by it (a ChatGPT login's Responses
    request goes to the ChatGPT backend, ``route.chatgpt_routed``), and keep the login on
    ``inbound``: the gateway's key counts only where it holds one for that upstream, and never
    over a subscription's own login (``login_of``)."""
    inbound.login, upstream = take_login_of(request, router, wire, inbound.request.model)
    return upstream


def take_login_of(
    request: web.Request, router: Router, wire: Wire, model: str
) -> tuple[Login, Upstream | None]:
    """``take_login`` for a request of ``model``: its login and its upstream."""
    login = login_of(request.headers)
    upstream = router.route(model, chatgpt=route.chatgpt_routed(wire, login))
    if upstream is not None and upstream.api_key is not None and not login.subscription:
        login = Login.GATEWAY_KEY
    return login, upstream


def session_headers(inbound: Inbound, upstream: Upstream | None) -> dict[str, str]:
    session = (inbound.session.id, inbound.session.source)
    name = upstream.name if upstream is not None else None
    return route.session_headers(session, name, inbound.login)


def bypassed(request: web.Request) -> bool:
    """``x-skillstate-bypass`` makes the gateway a byte-exact pass-through: no lane runs."""
    return request.headers.get(BYPASS, "").strip().lower() in ("1", "true", "yes")


def chosen_lanes(request: web.Request, lanes: list[Lane], off: frozenset[str]) -> list[Lane]:
    """The lanes this request runs: none when bypassed; those ``x-skillstate-lanes: a,b``
    names (for this request only, any lane the gateway built, switched off or not); else the
    ones not switched ``off``. An unknown name is a ``Refusal`` naming it."""
    if bypassed(request):
        return []
    asked = request.headers.get(LANES)
    if asked is None:
        return [lane for lane in lanes if lane.name not in off]
    try:
        names = parse_names(asked, [lane.name for lane in lanes])
    except ValueError as exc:
        raise Refusal(400, f"{LANES}: {exc}", reason=_INVALID_HEADER) from exc
    return [lane for lane in lanes if lane.name in names]


def request_extra(request: web.Request, asked_of: LaneHeaders) -> dict[str, str]:
    """What a request asks of the lanes by their headers (``x-skillstate-style: off``), by
    lane name: each lane that reads one declares it with the values it accepts
    (``LaneSpec.header``), and the gateway keeps those of the lanes it built
    (``GatewayContext.lane_headers``, given as ``asked_of``). An unknown value is a
    ``Refusal`` naming the known ones."""
    extra: dict[str, str] = {}
    for header, lane, known in asked_of:
        asked = request.headers.get(header)
        if asked is None:
            continue
        value = asked.strip().lower()
        if value not in known:
            said = ", ".join(known)
            message = f"{header}: {asked.strip()!r} is not one of {said}"
            raise Refusal(400, message, reason=_INVALID_HEADER)
        extra[lane] = value
    return extra


def request_mode(request: web.Request, default: Mode) -> Mode:
    """``x-skillstate-mode`` chooses the state lane's mode per request (an unknown one is
    ignored); a bypassed request is ``off``."""
    return route.mode_for(bypassed(request), request.headers.get(MODE), default)
