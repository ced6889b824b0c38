"""The dashboard's routes (GET /ui and its files) on real loopback: served from the package,
under a strict Content-Security-Policy, behind the guard. The page itself is driven in a
browser by tests/e2e/test_dashboard.py."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import aiohttp
import pytest

from skillstate.server.ui_routes import CSP
from skillstate.testing.gateway import gateway_for


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with gateway_for("http://127.0.0.1:9") as gateway:
        yield gateway.url


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.mark.parametrize(
    ("path", "media_type"),
    [
        ("/ui", "text/html"),
        ("/ui/format.js", "text/javascript"),
        ("/ui/charts.js", "text/javascript"),
        ("/ui/app.js", "text/javascript"),
        ("/ui/app.css", "text/css"),
        ("/ui/icon.svg", "image/svg+xml"),
    ],
)
async def test_the_dashboard_files_are_served_under_a_strict_policy(
    http: aiohttp.ClientSession, url: str, path: str, media_type: str
) -> None:
    async with http.get(url + path) as reply:
        assert reply.status == 200
        assert reply.content_type == media_type
        assert reply.headers["content-security-policy"] == CSP
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert len(await reply.read()) > 100


def test_the_policy_allows_only_the_gateways_own_files() -> None:
    directives = dict(d.split(" ", 1) for d in CSP.split("; "))
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'"
    assert directives["object-src"] == directives["base-uri"] == "'none'"
    assert "unsafe" not in CSP and "data:" not in CSP and "http" not in CSP


async def test_the_page_has_no_inline_script_or_style_and_names_no_other_host(
    http: aiohttp.ClientSession, url: str
) -> None:
    async with http.get(url + "/ui") as reply:
        page = await reply.text()
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", page, re.S)
    assert scripts == ["", "", ""]  # three scripts, their code in the gateway's own files
    sources = re.findall(r'<script src="([^"]+)" defer>', page)
    assert sources == ["/ui/format.js", "/ui/charts.js", "/ui/app.js"]
    assert "<style" not in page and "style=" not in page
    assert not re.search(r"\son\w+=", page)  # no inline event handlers
    assert "//" not in page.replace("http://www.w3.org/2000/svg", "")


async def test_the_dashboard_is_behind_the_guard(http: aiohttp.ClientSession, url: str) -> None:
    headers = {"host": "attacker.example"}
    async with http.get(url + "/ui", headers=headers) as reply:
        assert reply.status == 403
    headers = {"origin": "http://attacker.example"}
    async with http.get(url + "/ui/app.js", headers=headers) as reply:
        assert reply.status == 403
