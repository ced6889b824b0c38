"""Who may use the gateway: the ``Host`` a request names, the browser origin it comes from, and
the gateway's own token. Every route, unknown ones included, passes here first.

* **Host.** A browser sends the name it looked up in ``Host``; a page that rebinds its own DNS
  name to 127.0.0.1 (DNS rebinding) still sends its own name. A request is served when its
  Host, port aside, is ``localhost``, a loopback address, the address the gateway is bound to,
  any IP address when it is bound to a wildcard (``0.0.0.0``, ``::``), or a name in
  ``allowed_hosts`` (``*``: any). A request without a Host (HTTP/1.0) names nothing to rebind.
* **Origin.** Browsers send ``Origin`` on every cross-origin request and on every POST; agent
  clients (the SDKs, Codex, OpenCode, Claude Code) send none. A request with an Origin is
  served only from the gateway's own origin (``http://`` and its Host) or from one in
  ``allowed_origins`` (``*``: any), which also get the CORS answers a browser needs;
  ``Origin: null`` (sandboxed frames, local files) never.
* **Token.** With ``auth_token`` set, every route wants it, in ``Authorization: Bearer <token>``
  or ``x-skillstate-token: <token>``, compared in constant time; the dashboard's reads take
  the cookie its login form gives for it instead (``ui_login``). A token that came in
  ``Authorization`` is taken off the request before any handler sees it, so it never travels
  upstream as a provider credential: the provider key is then the gateway's own
  (``SKILLSTATE_API_KEY``) or the one the client sent in its wire's other credential header
  (``x-api-key``); our ``x-skillstate-*`` headers never cross.
* **Virtual keys** (``keyring``): while any key is usable, every request wants a key or the
  token; a tenant's key opens the models' routes and its own data's (``server.tenancy``),
  an admin's everything. Without a credential, /health answers a bare status only.
* **Exposure.** Listening on an address other than loopback without a token is refused before
  the gateway starts (``check_exposure``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from aiohttp import hdrs, web
from multidict import CIMultiDict

from skillstate.conversation import ErrorKind
from skillstate.server import ui_login
from skillstate.server.context import GatewayContext
from skillstate.server.errors import error_response, guess_wire
from skillstate.server.keyring import KeyRing
from skillstate.server.local_answers import answered
from skillstate.storage.keys import VirtualKey, looks_like_key
from skillstate.support.compare import same_secret

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Middleware(Protocol):
    def __call__(self, request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]: ...


TOKEN_HEADER = "x-skillstate-token"
ANY = "*"
_LOCALHOST = "localhost"
_CORS_METHODS = "GET, HEAD, POST, DELETE"
_CORS_MAX_AGE = "600"


class Exposed(Exception):
    """The gateway was asked to listen where others can reach it, with no token to stop them."""


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address; any other name may resolve off this machine."""
    if host.lower().rstrip(".") == _LOCALHOST:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None) -> None:
    """Refuse (``Exposed``) to listen on a non-loopback address without a token."""
    if token is None and not is_loopback(host):
        raise Exposed(
            f"refusing to listen on {host}: it is not a loopback address, and without "
            "SKILLSTATE_AUTH_TOKEN anyone who reaches it could spend the gateway's key and read "
            "or reset every session; set SKILLSTATE_AUTH_TOKEN, or listen on 127.0.0.1"
        )


@dataclass(frozen=True, slots=True)
class Guard:
    """The admission rules of one gateway: where it is bound, its token (None: no token), and
    the Host names and origins allowed besides its own (lowercase; ``*`` allows any)."""

    bound: str = "127.0.0.1"
    token: str | None = None
    hosts: frozenset[str] = frozenset()
    origins: frozenset[str] = frozenset()

    def host_allowed(self, host: str | None) -> bool:
        if host is None or ANY in self.hosts:
            return True
        name = host_name(host)
        if name in self.hosts or name in (_LOCALHOST, self.bound.lower()):
            return True
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            return False
        return address.is_loopback or _wildcard(self.bound)

    def origin_allowed(self, origin: str, host: str | None) -> bool:
        """``origin`` may call: it is the gateway's own (same scheme, host and port as the
        request's Host, which passed ``host_allowed``) or an allowed one."""
        origin = origin.strip().lower()
        if origin == "null":
            return False
        return self.foreign_allowed(origin) or (
            host is not None and origin == f"http://{host.strip().lower()}"
        )

    def foreign_allowed(self, origin: str) -> bool:
        """An origin other than the gateway's own that ``allowed_origins`` lets in."""
        return ANY in self.origins or origin.strip().lower() in self.origins

    def token_in(self, headers: Mapping[str, str]) -> str | None:
        """Where the request carries the token (``authorization`` or ``x-skillstate-token``),
        or None. Every candidate is compared, each in constant time."""
        assert self.token is not None
        found = None
        scheme, _, credential = headers.get(hdrs.AUTHORIZATION, "").partition(" ")
        if scheme.lower() == "bearer" and same_secret(credential.strip(), self.token):
            found = hdrs.AUTHORIZATION.lower()
        if same_secret(headers.get(TOKEN_HEADER, ""), self.token):
            found = found or TOKEN_HEADER
        return found


def host_name(host: str) -> str:
    """The name in a ``Host`` header, without its port or brackets, lowercase."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[1:end] if end > 0 else host
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        host = name
    return host.rstrip(".")


def guard_middleware(guard: Guard, gateway: GatewayContext | None = None) -> Middleware:
    """The middleware that applies ``guard`` before anything else runs (and ``gateway``'s
    virtual keys, where it has some)."""

    hosts: dict[str, bool] = {}
    """The verdicts on the Host headers seen (a client sends the same one every time)."""

    @web.middleware
    async def admit(request: web.Request, handler: Handler) -> web.StreamResponse:
        headers = request.headers
        origin = headers.get(hdrs.ORIGIN)
        host = headers.get(hdrs.HOST)
        if origin is not None or host is None or not hosts.get(host, False):
            refused = _refusal(guard, request, origin)
            if refused is not None:
                return refused
            if origin is None and host is not None and len(hosts) < _HOSTS_KEPT:
                hosts[host] = True
        if origin is not None and guard.foreign_allowed(origin):
            if request.method == hdrs.METH_OPTIONS and "access-control-request-method" in headers:
                preflight = web.Response(status=204, headers=_preflight(origin, headers))
                return answered(request, preflight, "cors_preflight")
            request[CORS_ORIGIN] = origin
        ring = gateway.keys if gateway is not None else None
        keyed = ring is not None and ring.active
        if guard.token is not None or keyed:
            where = guard.token_in(headers) if guard.token is not None else None
            if where is None:
                if keyed:
                    assert ring is not None
                    key, carried = await _virtual_key(ring, headers)
                    if key is None:  # the dashboard's cookie, holding a key
                        key = await ui_login.cookie_key(request, ring)
                    if key is not None:
                        return await _as_caller(request, handler, key, carried)
                if ui_login.open_to_all(request) or (
                    guard.token is not None and ui_login.admitted(request, guard.token)
                ):
                    return await handler(request)  # the dashboard's login, or its cookie
                if ui_login.wants_login(request):
                    return answered(request, ui_login.to_login(), "ui_login")
                if request.path == HEALTH and request.method in _READS:
                    return answered(request, bare_health(), "health")
                said = _NO_TOKEN if guard.token is not None and not keyed else _NO_KEY
                return _refuse(request, 401, ErrorKind.AUTHENTICATION, said, "no_token")
            # Our token, and a virtual key sent beside it, are no provider's credentials:
            # neither may reach the upstream.
            dropped: list[str] = []
            if where == hdrs.AUTHORIZATION.lower():
                dropped.append(hdrs.AUTHORIZATION)
            if keyed:
                dropped += [name for name in _KEY_HEADERS if _carries_key(headers, name)]
            if dropped:
                kept = CIMultiDict(headers)
                for name in dropped:
                    kept.popall(name, None)
                try:
                    request = request.clone(headers=kept)
                except UnicodeEncodeError:  # a header that was not UTF-8 cannot be copied
                    message = "a request header is not valid UTF-8"
                    kind = ErrorKind.INVALID_REQUEST
                    return _refuse(request, 400, kind, message, "invalid_header")
        return await handler(request)

    return admit


CALLER: web.RequestKey[VirtualKey] = web.RequestKey("caller", VirtualKey)
"""Set on a request a virtual key admitted: the key (its tenant, whether an admin's)."""
HEALTH = "/health"
_READS = (hdrs.METH_GET, hdrs.METH_HEAD)
_OPEN_TO_TENANTS = frozenset(
    prefix + path
    for prefix in ("/v1", "")
    for path in (
        "/chat/completions",
        "/responses",
        "/messages",
        "/messages/count_tokens",
        "/responses/compact",
        "/models",
    )
) | {HEALTH, "/", "/state", "/state/collapse", "/cost", "/cost/requests", "/metrics", "/mcp", "/ui"}
"""What a tenant's key may ask for: the models' routes, and what reads and changes its own
data (``server.tenancy`` scopes them), the dashboard's files (under /ui/) too; the rest
(/config, /audit, the documentation site) is an admin's."""


def open_to_tenants(path: str) -> bool:
    return path in _OPEN_TO_TENANTS or path.startswith("/ui/")


def bare_health() -> web.Response:
    """What /health tells a caller without a credential (or a tenant's key): that the gateway
    answers, and nothing of its upstreams, store or version."""
    return web.json_response({"status": "ok"})


_KEY_HEADERS = (hdrs.AUTHORIZATION, "x-api-key", TOKEN_HEADER)


def caller_of(request: web.Request, gateway: GatewayContext) -> VirtualKey | None:
    """The virtual key the request came with (None: the token, or no key at all); looked for
    only once the gateway has had a usable key (before, none can have come)."""
    keys = gateway.keys
    if keys is None or not keys.ever_active:
        return None
    return request.get(CALLER)


def tenant_of(key: VirtualKey | None) -> str | None:
    """The tenant of ``key`` (None: no key, or an admin's): its sessions are the tenant's
    own."""
    return None if key is None or key.admin else key.tenant


def _key_in(headers: Mapping[str, str], name: str) -> str:
    """What header ``name`` carries that has a virtual key's shape ("" if nothing)."""
    value = headers.get(name, "")
    if name == hdrs.AUTHORIZATION:
        scheme, _, value = value.partition(" ")
        if scheme.lower() != "bearer":
            return ""
    value = value.strip()
    return value if looks_like_key(value) else ""


def _carries_key(headers: Mapping[str, str], name: str) -> bool:
    return bool(_key_in(headers, name))


async def _virtual_key(ring: KeyRing, headers: Mapping[str, str]) -> tuple[VirtualKey | None, str]:
    """The usable virtual key the request carries, and the header it came in."""
    for name in _KEY_HEADERS:
        value = _key_in(headers, name)
        if value and (key := await ring.resolve(value)) is not None:
            return key, name
    return None, ""


async def _as_caller(
    request: web.Request, handler: Handler, key: VirtualKey, carried: str
) -> web.StreamResponse:
    """The request as ``key``'s: a tenant's only on the models' routes; the key taken off the
    headers (it is no provider's credential: the provider key is then the gateway's)."""
    if not key.admin and not open_to_tenants(request.path):
        message = (
            f"this key (tenant {key.tenant!r}) may use the models' routes and its own data's "
            "(/state, /cost, /metrics, /mcp, /ui) only"
        )
        return _refuse(request, 403, ErrorKind.PERMISSION, message, "not_admin")
    if not carried:  # came in the dashboard's cookie: no header to take off
        request[CALLER] = key
        return await handler(request)
    kept = CIMultiDict(request.headers)
    kept.popall(carried)
    try:
        request = request.clone(headers=kept)
    except UnicodeEncodeError:
        message = "a request header is not valid UTF-8"
        return _refuse(request, 400, ErrorKind.INVALID_REQUEST, message, "invalid_header")
    request[CALLER] = key
    return await handler(request)


_HOSTS_KEPT = 64
"""Host headers whose verdict is kept: a gateway is reached by a few names."""

CORS_ORIGIN: web.RequestKey[str] = web.RequestKey("cors_origin", str)
"""Set on a request from an allowed foreign origin: its response carries CORS headers."""


async def add_cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: an allowed foreign origin may read the response."""
    origin = request.get(CORS_ORIGIN)
    if origin is not None:
        response.headers["access-control-allow-origin"] = origin
        response.headers["access-control-expose-headers"] = "*"
        response.headers.add(hdrs.VARY, hdrs.ORIGIN)


_NO_KEY = (
    "this gateway wants a key (made with `skillstate keys create`) in an 'Authorization:"
    f" Bearer', 'x-api-key' or '{TOKEN_HEADER}' header"
)
_NO_TOKEN = (
    "this gateway wants its token (SKILLSTATE_AUTH_TOKEN) in an "
    f"'Authorization: Bearer' or '{TOKEN_HEADER}' header"
)


def _refusal(guard: Guard, request: web.Request, origin: str | None) -> web.Response | None:
    host = request.headers.get(hdrs.HOST)
    if not guard.host_allowed(host):
        message = (
            f"Host {host!r} is not this gateway's: it answers localhost, its loopback addresses "
            "and the address it listens on; add the name to allowed_hosts "
            "(SKILLSTATE_ALLOWED_HOSTS) to serve it"
        )
        return _refuse(request, 403, ErrorKind.PERMISSION, message, "host_not_allowed")
    if origin is not None and not guard.origin_allowed(origin, host):
        message = (
            f"requests from the web page at {origin!r} are not allowed; add its origin to "
            "allowed_origins (SKILLSTATE_ALLOWED_ORIGINS) to allow them"
        )
        return _refuse(request, 403, ErrorKind.PERMISSION, message, "origin_not_allowed")
    return None


def _refuse(
    request: web.Request, status: int, kind: ErrorKind, message: str, reason: str
) -> web.Response:
    """The refusal in the error shape of the wire the path names, seen with ``reason``
    (``local_answers``)."""
    headers = {"www-authenticate": 'Bearer realm="skillstate"'} if status == 401 else None
    wire = guess_wire(request.path, request.headers)
    out = error_response(wire, status, message, kind=kind, headers=headers)
    return answered(request, out, reason, message)


def _preflight(origin: str, headers: Mapping[str, str]) -> dict[str, str]:
    asked = headers.get("access-control-request-headers", "")
    return {
        "access-control-allow-origin": origin,
        "access-control-allow-methods": _CORS_METHODS,
        "access-control-allow-headers": asked,
        "access-control-max-age": _CORS_MAX_AGE,
        hdrs.VARY: hdrs.ORIGIN,
    }


def _wildcard(bound: str) -> bool:
    try:
        return ipaddress.ip_address(bound).is_unspecified
    except ValueError:
        return False
