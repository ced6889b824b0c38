"""The dashboard behind a login on a gateway with a token (``server.ui_login``), on real
loopback: the page sends a browser without a credential to the form; the token typed there
becomes an HttpOnly, SameSite=Strict cookie that admits the dashboard's reads and nothing else;
a wrong token, a forged or expired cookie, one made for another token, and a login posted from
another origin are refused. The form in a real browser: tests/e2e/test_dashboard_login.py."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import aiohttp
import pytest

from skillstate.server.ui_login import COOKIE, LIFETIME_S, cookie_for
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import RunningGateway, gateway_for

TOKEN = "a-long-gateway-token-0123456789"
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
async def gateway() -> AsyncIterator[RunningGateway]:
    async with ScriptedUpstream() as up, gateway_for(up.url, settings={"auth_token": TOKEN}) as gw:
        yield gw


def browser() -> aiohttp.ClientSession:
    """A client that keeps cookies and follows no redirect by itself."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def test_a_browser_without_a_credential_is_shown_the_form(gateway: RunningGateway) -> None:
    async with browser() as http:
        async with http.get(gateway.url + "/ui", allow_redirects=False) as reply:
            assert reply.status == 303 and reply.headers["location"] == "/ui/login"
        async with http.get(gateway.url + "/ui/login") as reply:
            page = await reply.text()
            assert reply.status == 200 and "<form method=post action=/ui/login>" in page
            assert "form-action 'self'" in reply.headers["content-security-policy"]
        async with http.get(gateway.url + "/cost") as reply:
            assert reply.status == 401  # not a page: refused, as before


async def test_the_token_becomes_a_cookie_for_the_dashboards_reads_only(
    gateway: RunningGateway,
) -> None:
    async with browser() as http:
        login = gateway.url + "/ui/login"
        async with http.post(login, data={"token": "wrong"}, allow_redirects=False) as reply:
            assert (
                reply.status == 401
                and "neither this gateway's token nor a usable key" in await reply.text()
            )
        async with http.post(login, data={"token": TOKEN}, allow_redirects=False) as reply:
            assert reply.status == 303 and reply.headers["location"] == "/ui"
            said = reply.headers["set-cookie"]
        assert "HttpOnly" in said and "SameSite=Strict" in said and "Path=/" in said
        for path in ("/ui", "/ui/app.js", "/cost", "/cost/requests", "/state", "/health"):
            async with http.get(gateway.url + path) as reply:
                assert reply.status == 200, path
        async with http.post(gateway.url + "/v1/chat/completions", json=CHAT) as reply:
            assert reply.status == 401  # a model's route wants the token itself
        for path in ("/config", "/mcp"):
            async with http.get(gateway.url + path) as reply:
                assert reply.status == 401, path
        async with http.post(gateway.url + "/state/collapse", params={"session": "s"}) as reply:
            assert reply.status == 401  # a change, not a read
        async with http.post(gateway.url + "/ui/logout", allow_redirects=False) as reply:
            assert reply.status == 303
        async with http.get(gateway.url + "/cost") as reply:
            assert reply.status == 401


@pytest.mark.parametrize(
    "value",
    [
        "forged",
        f"{int(time.time()) + 3600}.{'0' * 64}",
        cookie_for(TOKEN, time.time() - LIFETIME_S - 1),  # expired
        cookie_for("another gateway's token", time.time()),
    ],
    ids=["forged", "wrong-seal", "expired", "other-token"],
)
async def test_a_cookie_not_sealed_by_this_token_now_admits_nothing(
    gateway: RunningGateway, value: str
) -> None:
    async with aiohttp.ClientSession() as http:
        headers = {"cookie": f"{COOKIE}={value}"}
        async with http.get(gateway.url + "/cost", headers=headers) as reply:
            assert reply.status == 401


async def test_a_login_posted_from_another_origin_is_refused(gateway: RunningGateway) -> None:
    async with browser() as http:
        headers = {"origin": "http://evil.example"}
        async with http.post(
            gateway.url + "/ui/login", data={"token": TOKEN}, headers=headers
        ) as reply:
            assert reply.status == 403
            assert "set-cookie" not in reply.headers


async def test_without_a_token_the_form_sends_the_browser_to_the_dashboard() -> None:
    async with gateway_for("http://127.0.0.1:9") as gateway, browser() as http:
        async with http.get(gateway.url + "/ui/login", allow_redirects=False) as reply:
            assert reply.status == 303 and reply.headers["location"] == "/ui"


async def test_a_key_becomes_a_cookie_that_reads_as_its_caller_until_revoked() -> None:
    """On a gateway with virtual keys and no token: a tenant's key typed into the form gives a
    cookie admitting the dashboard's reads as that tenant (its own sessions), never a change
    or a model's route; revoking the key ends the login."""
    from skillstate.storage.keys import made
    from skillstate.testing.keys import GatewayKeys

    async with ScriptedUpstream() as up, gateway_for(up.url) as gateway, browser() as http:
        keys = GatewayKeys(gateway)
        text, key = await keys.make("alice")
        other, _ = made("bob")  # never stored
        login = gateway.url + "/ui/login"
        async with http.get(gateway.url + "/ui", allow_redirects=False) as reply:
            assert reply.status == 303 and reply.headers["location"] == "/ui/login"
        async with http.post(login, data={"token": other}, allow_redirects=False) as reply:
            assert reply.status == 401  # a key's shape, but no key of this gateway
        async with http.post(login, data={"token": text}, allow_redirects=False) as reply:
            assert reply.status == 303
            said = reply.headers["set-cookie"]
        assert "HttpOnly" in said and "SameSite=Strict" in said
        for path in ("/ui", "/cost", "/state", "/health"):
            async with http.get(gateway.url + path) as reply:
                assert reply.status == 200, path
        async with http.get(gateway.url + "/health") as reply:
            assert await reply.json() == {"status": "ok"}  # a tenant sees nothing of the gateway
        async with http.post(gateway.url + "/v1/chat/completions", json=CHAT) as reply:
            assert reply.status == 401
        async with http.post(gateway.url + "/state/collapse", params={"session": "s"}) as reply:
            assert reply.status == 401
        await keys.store.revoke(key.id, time.time())
        async with http.get(gateway.url + "/cost") as reply:
            assert reply.status == 401
