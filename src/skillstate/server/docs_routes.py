"""GET /docs: the documentation site, read-only, on the gateway's own port.

The site is the static build of docs/ (``make docs``: mkdocs, into ``server/docs_site/``
inside the package, which git ignores). It is looked up on each request, so a site built
while the gateway runs is served at once. Where it was never built (a wheel packaged without
it), /docs/ answers a short page saying how to build it and where the Markdown pages are.

Only files are served: a path naming a folder serves its ``index.html`` or nothing (no
listings), a path segment that is empty, ``.``, ``..``, hidden or holds a backslash is refused
with the same 404 as a missing file, and a file's media type comes from a fixed table by its
suffix, never from the system's. ``server.guard`` admits these requests as it admits /ui's:
Host and Origin checks, and the token when the gateway has one.

Every answer carries a Content-Security-Policy as strict as the dashboard's, but for the
site's own inline scripts (the theme's few lines that read the reader's preferences) and the
style attributes of its tables, each allowed by its SHA-256 digest, so no other inline script
or style runs.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from aiohttp import web

PATH = "/docs"
SITE_FOLDER = "docs_site"
"""The built site's folder under ``skillstate/server/`` (mkdocs.yml's ``site_dir``)."""

MEDIA_TYPES = {
    ".html": "text/html",
    ".css": "text/css",
    ".js": "text/javascript",
    ".json": "application/json",
    ".map": "application/json",
    ".xml": "application/xml",
    ".gz": "application/gzip",
    ".txt": "text/plain",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
}
"""Media types by suffix; anything else is ``application/octet-stream``."""

_TEXT = frozenset({"text/html", "text/css", "text/javascript", "application/json", "text/plain"})
_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.S)
_STYLE_ATTRIBUTE = re.compile(rb"""\sstyle=(?:"([^"]*)"|'([^']*)')""")

_POLICY = (
    "default-src 'self'",
    "style-src 'self'",
    # The theme draws its icons as CSS masks of data: SVGs.
    "img-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
)

HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}


def policy(page: bytes = b"") -> str:
    """The Content-Security-Policy for ``page``: the site's own files, the inline scripts of
    ``page`` by digest, and its style attributes by digest (Markdown tables align their
    columns with ``style="text-align: right;"``; CSP Level 3's ``'unsafe-hashes'`` allows
    exactly those values in attributes, and no ``<style>`` element)."""
    scripts = sorted({_digest(code) for code in _INLINE_SCRIPT.findall(page)})
    directives = ["script-src " + " ".join(["'self'", *scripts]), *_POLICY]
    styles = sorted(
        {
            _digest(html.unescape((double or single).decode()).encode())
            for double, single in _STYLE_ATTRIBUTE.findall(page)
        }
    )
    if styles:
        directives.append("style-src-attr 'unsafe-hashes' " + " ".join(styles))
    return "; ".join(directives)


def _digest(code: bytes) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(code).digest()).decode() + "'"


def package_site() -> Traversable:
    """Where ``make docs`` builds the site: ``skillstate/server/docs_site``."""
    return resources.files("skillstate.server").joinpath(SITE_FOLDER)


def add_docs_routes(router: web.UrlDispatcher, site: Traversable | None = None) -> None:
    """Register /docs (a redirect to /docs/) and the site's files under it; GET and HEAD only.
    ``site``: the built site's folder (by default the package's)."""
    folder = package_site() if site is None else site

    async def redirect(request: web.Request) -> web.StreamResponse:
        # The pages link to each other relatively, so the site's root needs its slash.
        location = PATH + "/" + (f"?{request.query_string}" if request.query_string else "")
        raise web.HTTPPermanentRedirect(location)

    async def serve(request: web.Request) -> web.StreamResponse:
        return serve_file(folder, request.match_info["tail"])

    redirect.__name__ = serve.__name__ = "docs"
    router.add_get(PATH, redirect)
    router.add_get(PATH + "/{tail:.*}", serve)


def serve_file(site: Traversable, tail: str) -> web.Response:
    """The answer for ``/docs/<tail>``: the file, the folder's ``index.html``, the page that
    says how to build a missing site, or 404."""
    parts = tail.split("/")
    if parts[-1] == "":
        parts[-1] = "index.html"
    if not all(_allowed(part) for part in parts):
        raise web.HTTPNotFound()
    if not site.joinpath("index.html").is_file():
        if parts == ["index.html"]:
            return _respond(_not_built_page(), "text/html")
        raise web.HTTPNotFound()
    target = site.joinpath(*parts)
    if not target.is_file():
        raise web.HTTPNotFound()
    suffix = Path(parts[-1]).suffix.lower()
    return _respond(target.read_bytes(), MEDIA_TYPES.get(suffix, "application/octet-stream"))


def _allowed(part: str) -> bool:
    """A path segment that names an entry of its folder and nothing else."""
    return bool(part) and not part.startswith(".") and "\\" not in part and "\0" not in part


def _respond(body: bytes, media_type: str) -> web.Response:
    headers = {**HEADERS, "content-security-policy": policy(body if _is_html(media_type) else b"")}
    charset = "utf-8" if media_type in _TEXT else None
    return web.Response(body=body, content_type=media_type, charset=charset, headers=headers)


def _is_html(media_type: str) -> bool:
    return media_type == "text/html"


def source_docs() -> Path | None:
    """docs/ of the source tree this package runs from, when it runs from one."""
    root = Path(__file__).resolve().parents[3]
    docs = root / "docs"
    return docs if (root / "mkdocs.yml").is_file() and docs.is_dir() else None


def _not_built_page() -> bytes:
    docs = source_docs()
    where = (
        f"<p>The pages are Markdown files in <code>{html.escape(str(docs))}</code>.</p>"
        if docs is not None
        else "<p>The pages are the Markdown files under <code>docs/</code> in the source "
        "repository.</p>"
    )
    page = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>skillstate: documentation not built</title></head><body>"
        "<h1>The documentation site is not built</h1>"
        "<p>This installation has no built copy of the documentation. In a clone of the "
        "repository, run <code>make docs</code>: it builds the site into "
        f"<code>src/skillstate/server/{SITE_FOLDER}/</code>, and this gateway serves it here "
        "at once, no restart needed.</p>"
        f"{where}</body></html>\n"
    )
    return page.encode()
