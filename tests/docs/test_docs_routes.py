"""GET /docs on real loopback: a built site's files with their media types and a policy that
allows only their own inline scripts, never a listing, never a file outside the site, GET and
HEAD only, the build instructions when no site is built, and the guard in front as for every
route. A small site written here stands for the built one (tests/docs/test_site_browser.py
serves the real build)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from skillstate.server.docs_routes import add_docs_routes, policy
from skillstate.server.guard import Guard, guard_middleware
from skillstate.testing.gateway import gateway_for

SCRIPT = b"var theme=localStorage.getItem('palette')"
INDEX = b"<!doctype html><title>home</title><script>" + SCRIPT + b"</script><p>home</p>"
SECRET = b"the secret next to the site"
TOKEN = "docs-test-token-0123456789"


@pytest.fixture
def built(tmp_path: Path) -> Path:
    """A site as mkdocs lays one out, and a file beside it that must never be served."""
    site = tmp_path / "site"
    (site / "assets").mkdir(parents=True)
    (site / "sub").mkdir()
    (site / "empty").mkdir()
    (site / "index.html").write_bytes(INDEX)
    (site / "page.html").write_bytes(b"<!doctype html><title>page</title><p>page</p>")
    (site / "assets" / "app.css").write_bytes(b"body{margin:0}")
    (site / "assets" / "app.js").write_bytes(b"console.log(1)")
    (site / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (site / "assets" / "data.json").write_bytes(b"{}")
    (site / "assets" / "blob.bin").write_bytes(b"\0\1")
    (site / "sub" / "index.html").write_bytes(b"<!doctype html><p>sub</p>")
    (site / "empty" / "note.txt").write_bytes(b"no index here")
    (site / ".hidden").write_bytes(SECRET)
    (tmp_path / "secret.txt").write_bytes(SECRET)
    return site


@contextlib.asynccontextmanager
async def serving(site: Path, guard: Guard | None = None) -> AsyncIterator[str]:
    """/docs over ``site``, behind ``guard``, on a free loopback port: its base URL."""
    app = web.Application(middlewares=[guard_middleware(guard or Guard())])
    add_docs_routes(app.router, site)
    runner = web.AppRunner(app)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def raw_get(url: str, target: str) -> tuple[int, bytes]:
    """GET ``target`` exactly as written (no client normalizes its dots): status and body."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    answer = await reader.read()
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


@pytest.mark.parametrize(
    ("path", "media_type", "body"),
    [
        ("/docs/", "text/html", INDEX),
        ("/docs/index.html", "text/html", INDEX),
        ("/docs/page.html", "text/html", None),
        ("/docs/sub/", "text/html", b"<!doctype html><p>sub</p>"),
        ("/docs/assets/app.css", "text/css", b"body{margin:0}"),
        ("/docs/assets/app.js", "text/javascript", b"console.log(1)"),
        ("/docs/assets/logo.png", "image/png", None),
        ("/docs/assets/data.json", "application/json", b"{}"),
        ("/docs/assets/blob.bin", "application/octet-stream", None),
    ],
)
async def test_the_sites_files_are_served_with_their_media_types(
    built: Path, path: str, media_type: str, body: bytes | None
) -> None:
    async with serving(built) as url, aiohttp.ClientSession() as http, http.get(url + path) as r:
        assert r.status == 200
        assert r.content_type == media_type
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "content-security-policy" in r.headers
        if body is not None:
            assert await r.read() == body


async def test_head_answers_and_other_methods_are_refused(built: Path) -> None:
    async with serving(built) as url, aiohttp.ClientSession() as http:
        async with http.head(url + "/docs/page.html") as reply:
            assert reply.status == 200
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            async with http.request(method, url + "/docs/page.html") as reply:
                assert reply.status == 405, method
    assert (built / "page.html").read_bytes().endswith(b"<p>page</p>")


async def test_the_root_without_its_slash_is_redirected(built: Path) -> None:
    async with (
        serving(built) as url,
        aiohttp.ClientSession() as http,
        http.get(url + "/docs?x=1", allow_redirects=False) as reply,
    ):
        assert reply.status == 308
        assert reply.headers["location"] == "/docs/?x=1"


async def test_a_page_allows_its_own_inline_scripts_and_no_other(built: Path) -> None:
    async with (
        serving(built) as url,
        aiohttp.ClientSession() as http,
        http.get(url + "/docs/") as reply,
    ):
        csp = reply.headers["content-security-policy"]
    digest = base64.b64encode(hashlib.sha256(SCRIPT).digest()).decode()
    directives = dict(d.split(" ", 1) for d in csp.split("; "))
    assert directives["script-src"] == f"'self' 'sha256-{digest}'"
    assert directives["default-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["object-src"] == directives["base-uri"] == "'none'"
    assert "unsafe" not in csp and "http" not in csp
    assert policy(b"<p>no script</p>").startswith("script-src 'self';")


def test_a_pages_style_attributes_are_allowed_by_their_digests_only() -> None:
    """Markdown tables align columns with style attributes: those values, and no <style>."""
    page = b"<td style=\"text-align: right;\">1</td><td style='color:&quot;red&quot;'>2</td>"
    directives = dict(d.split(" ", 1) for d in policy(page).split("; "))
    digests = sorted(
        "'sha256-" + base64.b64encode(hashlib.sha256(value).digest()).decode() + "'"
        for value in (b"text-align: right;", b'color:"red"')
    )
    assert directives["style-src-attr"] == " ".join(["'unsafe-hashes'", *digests])
    assert directives["style-src"] == "'self'"
    assert "style-src-attr" not in policy(b"<p>plain</p>")


@pytest.mark.parametrize(
    "path",
    ["/docs/missing.html", "/docs/assets/", "/docs/empty/", "/docs/.hidden", "/docs/sub/x/"],
)
async def test_missing_files_and_folders_without_an_index_are_404(built: Path, path: str) -> None:
    async with serving(built) as url, aiohttp.ClientSession() as http, http.get(url + path) as r:
        assert r.status == 404
        assert b"no index here" not in await r.read()


@pytest.mark.parametrize(
    "target",
    [
        "/docs/../secret.txt",
        "/docs/%2e%2e/secret.txt",
        "/docs/%2E%2E/secret.txt",
        "/docs/sub/../../secret.txt",
        "/docs/sub/%2e%2e/%2e%2e/secret.txt",
        "/docs/..%2fsecret.txt",
        "/docs/%2e%2e%2fsecret.txt",
        "/docs/..%5csecret.txt",
        "/docs/.%2e/secret.txt",
        "/docs//etc/passwd",
        "/docs/%2fetc%2fpasswd",
    ],
)
async def test_a_path_out_of_the_site_is_refused(built: Path, target: str) -> None:
    async with serving(built) as url:
        status, body = await raw_get(url, target)
    assert status in (400, 404), (target, status)
    assert SECRET not in body and b"root:" not in body


async def test_without_a_built_site_the_root_says_how_to_build_it(tmp_path: Path) -> None:
    async with serving(tmp_path / "never-built") as url, aiohttp.ClientSession() as http:
        async with http.get(url + "/docs/") as reply:
            assert reply.status == 200
            assert reply.content_type == "text/html"
            page = await reply.text()
        async with http.get(url + "/docs/cost.html") as reply:
            assert reply.status == 404
    assert "make docs" in page and "docs_site" in page
    assert "<script" not in page and "//" not in page.split("<body>")[1]


async def test_the_gateway_serves_docs_behind_its_guard() -> None:
    environ = {"SKILLSTATE_AUTH_TOKEN": TOKEN}
    async with (
        gateway_for("http://127.0.0.1:9", environ=environ) as gateway,
        aiohttp.ClientSession() as http,
    ):
        url = gateway.url + "/docs/"
        async with http.get(url) as reply:
            assert reply.status == 401
        token = {"x-skillstate-token": TOKEN}
        async with http.get(url, headers=token) as reply:
            assert reply.status == 200
            assert reply.content_type == "text/html"
        async with http.get(url, headers={**token, "host": "attacker.example"}) as reply:
            assert reply.status == 403
        headers = {**token, "origin": "http://attacker.example"}
        async with http.get(url, headers=headers) as reply:
            assert reply.status == 403
        async with http.get(gateway.url + "/docs", headers=token, allow_redirects=False) as r:
            assert r.status == 308 and r.headers["location"] == "/docs/"
