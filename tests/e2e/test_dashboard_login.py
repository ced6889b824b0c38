"""The dashboard behind its login in a real browser (headless Chromium, Playwright): on a
gateway with a token, /ui sends the browser to the form; the token typed there opens the
dashboard, which draws its data; a wrong token keeps it out."""

from __future__ import annotations

import re

import pytest
from dashboard_support import WAIT_MS, chromium_browser

from skillstate.testing.gateway import gateway_for

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
        await expect(page.get_by_role("alert")).to_have_text(re.compile("not this gateway"))
        await page.fill("input[name=token]", TOKEN)
        await page.click("button[type=submit]")
        await expect(page.locator("#status")).to_have_text(re.compile(r"^updated"), timeout=WAIT_MS)
        assert page.url == gateway.url + "/ui"
        cookies = await page.context.cookies()
        (login,) = [c for c in cookies if c["name"] == "skillstate_ui"]
        assert login["httpOnly"] and login["sameSite"] == "Strict"
        assert TOKEN not in login["value"]
    assert errors == []
