"""GET /ui: the dashboard, on the gateway's own port (docs/ui.md says what it shows).

The page, its scripts (``format.js``, ``charts.js``, ``app.js``, in that order), its style
sheet and its icon are the package's own files
(``server/ui/``), read once when the routes are registered; nothing comes from another host,
so the page works with no network. The page reads the gateway's JSON routes (/cost,
/cost/requests, /state) from its own origin.

``server.guard`` admits these requests as it admits every other: the Host and Origin checks
hold, and a gateway with a token wants it here too. Every answer carries a strict
Content-Security-Policy: the page's own files only, no inline script or style, no frames,
no forms, no plugins; a value the page shows that was written to look like markup stays text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources

from aiohttp import web

PATH = "/ui"

#: The files under ``server/ui/`` and the routes that serve them, with their media types.
FILES = {
    PATH: ("index.html", "text/html"),
    f"{PATH}/format.js": ("format.js", "text/javascript"),
    f"{PATH}/charts.js": ("charts.js", "text/javascript"),
    f"{PATH}/app.js": ("app.js", "text/javascript"),
    f"{PATH}/app.css": ("app.css", "text/css"),
    f"{PATH}/icon.svg": ("icon.svg", "image/svg+xml"),
}

CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)

HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}

Handler = Callable[[web.Request], Awaitable[web.Response]]


def add_ui_routes(router: web.UrlDispatcher) -> None:
    """Register the dashboard's routes (aiohttp answers HEAD for them too)."""
    folder = resources.files("skillstate.server").joinpath("ui")
    for path, (name, media_type) in FILES.items():
        router.add_get(path, _serve(folder.joinpath(name).read_bytes(), media_type))


def _serve(body: bytes, media_type: str) -> Handler:
    async def serve(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type=media_type, charset="utf-8", headers=HEADERS)

    serve.__name__ = "ui"
    return serve
