"""The dashboard behind its login in a real browser (headless Chromium, Playwright): on a
gateway with a token, /ui sends the browser to the form; the token typed there opens the
dashboard, which draws its data; a wrong token keeps it out. On a gateway with virtual keys, a
tenant's key opens a dashboard of its own sessions only, an admin's of everyone's."""

from __future__ import annotations

import json
import re

import aiohttp
import pytest
from dashboard_support import WAIT_MS, chromium_browser

from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.keys import GatewayKeys, bearer

pytestmark = pytest.mark.browser
TOKEN = "a-long-gateway-token-0123456789"


async def test_the_dashboard_opens_behind_its_login() -> None:
    from playwright.async_api import expect

    errors: list[str] = []
    settings = {"auth_token": TOKEN}
    async with (
        gateway_for("http://127.0.0.1:9", settings=settings) as gateway,
        chromium_browser() as browser,
    ):
        page = await (await browser.new_context()).new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        await page.goto(gateway.url + "/ui")
        assert page.url == gateway.url + "/ui/login"
        await page.fill("input[name=token]", "not the token")
        await page.click("button[type=submit]")
        await expect(page.get_by_role("alert")).to_have_text(re.compile("neither this gateway"))
        await page.fill("input[name=token]", TOKEN)
        await page.click("button[type=submit]")
        await expect(page.locator("#status")).to_have_text(re.compile(r"^updated"), timeout=WAIT_MS)
        assert page.url == gateway.url + "/ui"
        cookies = await page.context.cookies()
        (login,) = [c for c in cookies if c["name"] == "skillstate_ui"]
        assert login["httpOnly"] and login["sameSite"] == "Strict"
        assert TOKEN not in login["value"]
    assert errors == []


async def test_a_tenants_key_opens_a_dashboard_of_its_own_sessions() -> None:
    from playwright.async_api import expect

    errors: list[str] = []
    patch = json.dumps({"state_patch": {"findings": {"x": "seen"}}, "action": "noted"})
    async with (
        ScriptedUpstream(lambda request: Reply(text=patch)) as up,
        gateway_for(up.url, settings={"mode": "paper"}) as gateway,
        chromium_browser() as browser,
    ):
        made = GatewayKeys(gateway)
        keys = {}
        for tenant in ("alice", "bob", "ops"):
            keys[tenant], _ = await made.make(tenant, admin=tenant == "ops")
        async with aiohttp.ClientSession() as http:
            for tenant in ("alice", "bob"):
                headers = {**bearer(keys[tenant]), "x-skillstate-session": "s1"}
                body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "go"}]}
                url = gateway.url + "/v1/chat/completions"
                async with http.post(url, json=body, headers=headers) as reply:
                    assert reply.status == 200
        for who, shown in (("alice", {"alice/s1"}), ("ops", {"alice/s1", "bob/s1"})):
            page = await (await browser.new_context()).new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(gateway.url + "/ui")
            assert page.url == gateway.url + "/ui/login"
            await page.fill("input[name=token]", keys[who])
            await page.click("button[type=submit]")
            await expect(page.locator("#status")).to_have_text(
                re.compile(r"^updated"), timeout=WAIT_MS
            )
            rows = page.locator("#sessions tr[data-session]")
            await expect(rows).to_have_count(len(shown), timeout=WAIT_MS)
            assert {await row.get_attribute("data-session") for row in await rows.all()} == shown
            await page.context.close()
    assert errors == []
