"""The dashboard behind a login, on a gateway that has a token (``auth_token``) or virtual
keys: a browser sends no ``Authorization`` header, so /ui asks for the token or a key once, in
a form, and keeps a cookie instead.

* ``GET /ui/login``: the form (its own origin only: the page's policy lets the form post
  nowhere else and loads nothing). A browser that asks for /ui without a credential is sent
  here (303).
* ``POST /ui/login``: the token or a usable virtual key, as the form's ``token`` field.
  Right: the cookie ``skillstate_ui`` (``HttpOnly``, ``SameSite=Strict``, ``Path=/``, for
  ``LIFETIME_S``) and 303 to /ui; wrong: the form again, 401, saying so.
* ``POST /ui/logout``: the cookie cleared, 303 to the form.

The cookie holds its expiry and an HMAC-SHA256 of it under a key derived from the token, so
every process with the same token checks it without shared state, and a new token ends every
login. A key's cookie holds the key itself (the gateway keeps only its digest, so it has nothing
to seal a cookie with that a reader of the store could not forge): it is looked up on every
request as a key sent in a header is (``keyring``), so revoking the key ends the login within
seconds, and the dashboard reads as the key's caller: a tenant's own sessions and spend
(``server.tenancy``), an admin's all. A cookie admits only what the dashboard reads (``GET``
and ``HEAD`` of /ui and its files, /cost, /cost/requests, /state, /health): never a model's
route, /config, /mcp or a change.
CSRF: the cookie is ``SameSite=Strict`` (a browser sends it on no request another site starts),
and the guard refuses a request from another origin anyway; the form posts to its own origin.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable

from aiohttp import hdrs, web

from skillstate.server.context import GATEWAY
from skillstate.server.keyring import KeyRing
from skillstate.storage.keys import VirtualKey, looks_like_key
from skillstate.support.compare import same_secret

LOGIN = "/ui/login"
LOGOUT = "/ui/logout"
COOKIE = "skillstate_ui"
LIFETIME_S = 12 * 3600
"""How long a login lasts."""
_READS = ("/ui", "/cost", "/state", "/health")
"""The paths (and those under them) a dashboard cookie admits, to read."""
_POLICY = "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"


def cookie_for(token: str, now: float) -> str:
    """The cookie's value: its expiry and the token's seal on it."""
    expiry = str(int(now + LIFETIME_S))
    return f"{expiry}.{_seal(token, expiry)}"


def admitted(request: web.Request, token: str, *, clock: Callable[[], float] = time.time) -> bool:
    """Whether ``request`` is one the dashboard's cookie admits, with a cookie still good."""
    if not reading(request):
        return False
    value = request.cookies.get(COOKIE, "")
    expiry, _, seal = value.partition(".")
    if not expiry.isdigit() or int(expiry) <= clock():
        return False
    return hmac.compare_digest(seal, _seal(token, expiry))


async def cookie_key(request: web.Request, ring: KeyRing) -> VirtualKey | None:
    """The usable key whose cookie ``request`` carries, where the cookie admits it."""
    value = request.cookies.get(COOKIE, "")
    if not looks_like_key(value) or not reading(request):
        return None
    return await ring.resolve(value)


def reading(request: web.Request) -> bool:
    """A read of what the dashboard shows: all a cookie may ask for."""
    return request.method in (hdrs.METH_GET, hdrs.METH_HEAD) and _reads(request.path)


def open_to_all(request: web.Request) -> bool:
    """The login form and its answer need no credential: they are how one is given."""
    return request.path in (LOGIN, LOGOUT)


def wants_login(request: web.Request) -> bool:
    """A browser asking for the dashboard's page without a credential: shown the form."""
    return request.method in (hdrs.METH_GET, hdrs.METH_HEAD) and request.path == "/ui"


def to_login() -> web.Response:
    return web.Response(status=303, headers={hdrs.LOCATION: LOGIN, hdrs.CACHE_CONTROL: "no-store"})


def add_login_routes(router: web.UrlDispatcher, token: str | None) -> None:
    """The form and its answers (without a token or a usable key there is nothing to log in
    to: the form sends the browser to /ui)."""

    def keys(request: web.Request) -> KeyRing | None:
        ring = request.app[GATEWAY].keys if GATEWAY in request.app else None
        return ring if ring is not None and ring.active else None

    async def form(request: web.Request) -> web.Response:
        if token is None and keys(request) is None:
            return web.Response(status=303, headers={hdrs.LOCATION: "/ui"})
        return _form(200, "")

    async def login(request: web.Request) -> web.Response:
        ring = keys(request)
        if token is None and ring is None:
            return web.Response(status=303, headers={hdrs.LOCATION: "/ui"})
        given = (await request.post()).get("token", "")
        given = given.strip() if isinstance(given, str) else ""
        if token is not None and same_secret(given, token):
            value = cookie_for(token, time.time())
        elif ring is not None and looks_like_key(given) and await ring.resolve(given):
            value = given
        else:
            return _form(401, "That is neither this gateway's token nor a usable key.")
        out = web.Response(status=303, headers={hdrs.LOCATION: "/ui"})
        out.set_cookie(
            COOKIE,
            value,
            max_age=LIFETIME_S,
            path="/",
            httponly=True,
            samesite="Strict",
        )
        return out

    async def logout(request: web.Request) -> web.Response:
        out = web.Response(status=303, headers={hdrs.LOCATION: LOGIN})
        out.del_cookie(COOKIE, path="/")
        return out

    router.add_get(LOGIN, form)
    router.add_post(LOGIN, login)
    router.add_post(LOGOUT, logout)


def _form(status: int, said: str) -> web.Response:
    warning = f"<p role=alert>{said}</p>" if said else ""
    page = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width'><title>skillstate: log in</title>"
        "</head><body><h1>skillstate</h1>"
        "<p>This gateway wants its token or your key. Type it once; this browser keeps a "
        f"login for 12 hours.</p>{warning}<form method=post action={LOGIN}>"
        "<label>Token or key <input type=password name=token autocomplete=current-password required"
        " autofocus></label> <button type=submit>Log in</button></form></body></html>"
    )
    headers = {
        "content-security-policy": _POLICY,
        "x-content-type-options": "nosniff",
        # Not no-referrer: under it Chromium posts the form with ``Origin: null``, which the
        # guard refuses (as it must: sandboxed frames and files send that too).
        "referrer-policy": "same-origin",
        hdrs.CACHE_CONTROL: "no-store",
    }
    return web.Response(status=status, text=page, content_type="text/html", headers=headers)


def _reads(path: str) -> bool:
    return any(path == read or path.startswith(read + "/") for read in _READS)


def _seal(token: str, expiry: str) -> str:
    key = hashlib.sha256(b"skillstate ui login\x00" + token.encode()).digest()
    return hmac.new(key, expiry.encode(), hashlib.sha256).hexdigest()
