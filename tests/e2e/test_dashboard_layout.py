"""The dashboard's layout in a real browser (Debian's headless Chromium, through Playwright)
at a phone's width and two desktop ones, over a realistic ledger written through the ledger's
own store (``dashboard_support.demo_rows``): nothing wider than the window, no boxes on top of
one another, no text or chart label cut. Also takes docs/ui.png (``test_the_docs_screenshot``,
docs/ui.md says how)."""

from __future__ import annotations

import pytest
from dashboard_support import (
    HYBRID,
    LAYOUT,
    WAIT_MS,
    WIDTHS,
    artifacts,
    chromium_browser,
    ledger_gateway,
    open_page,
)

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", WIDTHS)
async def test_nothing_overflows_overlaps_or_is_cut(width: int) -> None:
    from playwright.async_api import expect

    errors: list[str] = []
    async with ledger_gateway() as (url, _), chromium_browser() as browser:
        page = await open_page(browser, url + "/ui", width, errors)
        assert await page.evaluate(LAYOUT) == []
        # the same with a session open (its detail has wide tables of its own)
        await page.locator(f'#sessions tr[data-session="{HYBRID}"]').click()
        await expect(page.locator("#detail-cost")).to_contain_text(
            "upstream requests", timeout=WAIT_MS
        )
        assert await page.evaluate(LAYOUT) == []
        await page.screenshot(path=str(artifacts() / f"dashboard-{width}.png"), full_page=True)
    assert errors == []


async def test_the_checks_see_a_cut_label_and_an_overflow() -> None:
    """The layout checks are not vacuous: a chart label pushed out of its chart and a box
    wider than the window are both reported."""
    errors: list[str] = []
    async with ledger_gateway() as (url, _), chromium_browser() as browser:
        page = await open_page(browser, url + "/ui", 1280, errors)
        await page.evaluate(
            """() => {
              const chart = document.getElementById("chart-hourly");
              chart.setAttribute("viewBox", "40 0 600 200");
              document.querySelector(".card-sub").style.whiteSpace = "nowrap";
              document.querySelector(".card-sub").textContent = "x".repeat(400);
            }"""
        )
        problems = await page.evaluate(LAYOUT)
        assert any(p.startswith("label cut: chart-hourly") for p in problems), problems
        assert any(p.startswith("text cut:") for p in problems), problems
        await page.evaluate('() => { document.body.style.minWidth = "2000px"; }')
        problems = await page.evaluate(LAYOUT)
        assert any(p.startswith("page overflows") for p in problems), problems


async def test_the_docs_screenshot() -> None:
    """docs/ui.png: the dashboard at 1280 px over a hybrid session that saved and a
    pass-through one, in UTC. ``SKILLSTATE_ARTIFACTS=/tmp/ui pytest tests/e2e/
    test_dashboard_layout.py -k docs_screenshot`` then ``cp /tmp/ui/ui.png docs/ui.png``."""
    errors: list[str] = []
    async with ledger_gateway(loss=False) as (url, _), chromium_browser() as browser:
        page = await open_page(browser, url + "/ui", 1280, errors)
        assert "saved" in (await page.text_content("#saved-figure") or "")
        await page.screenshot(path=str(artifacts() / "ui.png"), full_page=True)
    assert errors == []
