"""The dashboard's filters, headline and times in a real browser (Debian's headless Chromium,
through Playwright) over a realistic ledger written through the ledger's own store
(``dashboard_support.demo_rows``): a model, a session or a time range changes every figure,
and the page's address keeps the choice; the headline shows a saving as a saving and a loss as
a loss; times are local, to the second; a group's unpriced requests are counted beside its
priced cost, and a stale price catalog is said."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import pytest
from dashboard_support import (
    HYBRID,
    LOSS,
    PASSTHROUGH,
    WAIT_MS,
    chromium_browser,
    get_json,
    ledger_gateway,
    open_page,
    watch,
)

pytestmark = pytest.mark.browser


def _only(values: list[str]) -> set[str]:
    return {value.strip() for value in values}


async def _figure(page: Any, value: float | None) -> str:
    """What the page shows for a cost of ``value``, by its own formatter."""
    text: str = await page.evaluate("(v) => priced(v, 0).textContent", value)
    return text


async def test_a_model_chosen_shows_only_that_models_figures_and_a_reload_keeps_it() -> None:
    from playwright.async_api import expect

    errors: list[str] = []
    async with ledger_gateway() as (url, _), chromium_browser() as browser:
        page = await open_page(browser, url + "/ui", 1280, errors)
        everything = await get_json(url + "/cost")
        assert {row["model"] for row in everything["by_model"]} == {
            "gpt-4.1",
            "gpt-4.1-mini",
            "claude-sonnet-4-5",
        }
        await expect(page.locator("#filter-model option")).to_have_count(4)  # and "All models"
        await page.select_option("#filter-model", "gpt-4.1")
        one = await get_json(url + "/cost?model=gpt-4.1")
        assert one["totals"]["cost_usd"] != everything["totals"]["cost_usd"]
        cost = page.locator("#cost-figure")
        await expect(cost).to_have_text(await _figure(page, one["totals"]["cost_usd"]))
        assert parse_qs(urlsplit(page.url).query) == {"model": ["gpt-4.1"]}
        requests = page.locator("#requests tbody td:nth-child(3)")
        await expect(requests.first).to_have_text("gpt-4.1")
        assert _only(await requests.all_text_contents()) == {"gpt-4.1"}
        assert await page.locator("#chart-models rect").count() == 1
        sessions = await page.locator("#sessions tbody tr").evaluate_all(
            "(rows) => rows.map((row) => row.dataset.session)"
        )
        assert sessions == [HYBRID]
        shown = await page.text_content('#measured [data-field="requests"]')
        assert shown == f"{one['totals']['requests']:,}"

        await page.reload()
        await expect(page.locator("#status")).to_have_text(re.compile(r"^updated"), timeout=WAIT_MS)
        assert await page.input_value("#filter-model") == "gpt-4.1"
        await expect(cost).to_have_text(await _figure(page, one["totals"]["cost_usd"]))

        await page.click("#filter-reset")
        await expect(cost).to_have_text(await _figure(page, everything["totals"]["cost_usd"]))
        assert urlsplit(page.url).query == ""
    assert errors == []


async def test_the_choices_stay_put_across_refreshes_and_keep_a_choice_without_rows() -> None:
    """The periodic refresh leaves the options as they are when they have not changed (a
    list the user has open is not redrawn under them), and a model named in the address that
    has no rows stays chosen, with nothing to show."""
    from playwright.async_api import expect

    errors: list[str] = []
    async with ledger_gateway() as (url, _), chromium_browser() as browser:
        page = await open_page(browser, url + "/ui?model=retired-model", 1280, errors)
        assert await page.input_value("#filter-model") == "retired-model"
        await expect(page.locator('#measured [data-field="requests"]')).to_have_text("0")
        await page.evaluate(
            "() => { window.kept = document.querySelector('#filter-model option:last-child'); }"
        )
        status = page.locator("#status")
        await expect(status).not_to_have_text(await status.text_content() or "", timeout=WAIT_MS)
        assert await page.evaluate("() => window.kept.isConnected")
    assert errors == []


async def test_a_session_chosen_shows_its_figures_and_pass_through_saves_exactly_nothing() -> None:
    from playwright.async_api import expect

    errors: list[str] = []
    async with ledger_gateway() as (url, _), chromium_browser() as browser:
        page = await open_page(browser, url + "/ui", 1280, errors)
        await page.select_option("#filter-session", PASSTHROUGH)
        one = await get_json(f"{url}/cost?session={PASSTHROUGH}")
        assert one["totals"]["saved_usd"] == 0
        await expect(page.locator("#cost-figure")).to_have_text(
            await _figure(page, one["totals"]["cost_usd"])
        )
        await expect(page.locator("#saved-figure")).to_have_text("$0.0000")
        assert await page.get_attribute("#saved-figure > span", "class") == "money"
        sessions = page.locator("#requests tbody td:nth-child(2)")
        assert _only(await sessions.all_text_contents()) == {PASSTHROUGH}
        assert parse_qs(urlsplit(page.url).query) == {"session": [PASSTHROUGH]}
    assert errors == []


async def test_a_time_range_sends_since_and_until_and_every_figure_follows() -> None:
    from playwright.async_api import expect

    errors: list[str] = []
    async with ledger_gateway() as (url, now), chromium_browser() as browser:
        page = await open_page(browser, url + "/ui", 1280, errors)
        sent: list[str] = []
        page.on("request", lambda r: sent.append(r.url) if "/cost" in r.url else None)
        await page.select_option("#filter-range", "1h")
        requests = page.locator('#measured [data-field="requests"]')
        everything = await get_json(url + "/cost")
        await expect(requests).not_to_have_text(f"{everything['totals']['requests']:,}")
        assert parse_qs(urlsplit(page.url).query) == {"range": ["1h"]}
        ranged = [u for u in sent if "since=" in u]
        assert {urlsplit(u).path for u in ranged} == {"/cost", "/cost/requests"}
        query = parse_qs(urlsplit(ranged[0]).query)
        since = dt.datetime.fromisoformat(query["since"][0]).timestamp()
        until = dt.datetime.fromisoformat(query["until"][0]).timestamp()
        assert until - since == 3601  # an hour back, and this second included
        assert abs(until - now) < 120
        last_hour = await get_json(ranged[0])
        assert 0 < last_hour["totals"]["requests"] < everything["totals"]["requests"]
        await expect(requests).to_have_text(f"{last_hour['totals']['requests']:,}")
        assert LOSS not in (await page.text_content("#sessions tbody") or "")
        shown = int(await page.get_attribute("#chart-hourly", "data-points") or 0)
        assert shown == len(last_hour["hourly"])
    assert errors == []


async def test_the_headline_shows_a_saving_as_a_saving_and_a_loss_as_a_loss() -> None:
    errors: list[str] = []
    async with ledger_gateway() as (url, _), chromium_browser() as browser:
        page = await open_page(browser, f"{url}/ui?session={LOSS}", 1280, errors)
        lost = await get_json(f"{url}/cost?session={LOSS}")
        assert lost["totals"]["saved_usd"] < 0
        assert await page.input_value("#filter-session") == LOSS  # from the address
        figure = await page.text_content("#saved-figure") or ""
        assert figure.startswith("\u2212$") and figure.endswith(" lost")
        assert await page.get_attribute("#saved-figure > span", "class") == "loss"
        assert "is-loss" in (await page.get_attribute("#card-saved", "class") or "")
        colour = await page.eval_on_selector(
            "#saved-figure > span", "(n) => getComputedStyle(n).color"
        )
        assert colour == "rgb(198, 40, 40)"  # the loss colour, not the ink's
        part = -lost["totals"]["saved_usd"] / lost["totals"]["passthrough_cost_usd"] * 100
        sub = await page.text_content("#saved-sub") or ""
        assert sub.startswith(f"a loss: {part:.1f} % more than the pass-through cost")

        page = await open_page(browser, f"{url}/ui?session={HYBRID}", 1280, errors)
        won = await get_json(f"{url}/cost?session={HYBRID}")
        figure = await page.text_content("#saved-figure") or ""
        assert figure.endswith(" saved") and not figure.startswith("\u2212")
        assert await page.get_attribute("#saved-figure > span", "class") == "saving"
        part = won["totals"]["saved_usd"] / won["totals"]["passthrough_cost_usd"] * 100
        sub = await page.text_content("#saved-sub") or ""
        assert sub.startswith(f"{part:.1f} % of the pass-through cost")
    assert errors == []


async def test_times_are_the_browsers_local_time_to_the_second() -> None:
    errors: list[str] = []
    zone = "America/St_Johns"  # three and a half hours from UTC: no whole-hour offset hides it
    async with ledger_gateway() as (url, _), chromium_browser() as browser:
        page = await open_page(browser, url + "/ui", 1280, errors, timezone=zone)
        (row,) = (await get_json(url + "/cost/requests?limit=1"))["requests"]
        assert row["ts"] != int(row["ts"])  # the ledger keeps fractions of a second
        local = dt.datetime.fromtimestamp(int(row["ts"]), ZoneInfo(zone))
        first = await page.text_content("#requests tbody tr:first-child td:first-child")
        assert first == local.strftime("%Y-%m-%d %H:%M:%S")
        assert await page.text_content("#requests thead th:first-child") == f"Time ({zone})"
        span = await page.text_content("#span") or ""
        assert span.endswith(f"({zone})") and "." not in span and "T" not in span
        cost = await get_json(url + "/cost")
        until = dt.datetime.fromisoformat(cost["until"]).astimezone(ZoneInfo(zone))
        assert until.strftime("%Y-%m-%d %H:%M:%S") in span
    assert errors == []


# --- the money fields of /cost -------------------------------------------------------------


async def test_unpriced_requests_are_counted_beside_the_cost_and_a_stale_catalog_is_said() -> None:
    from playwright.async_api import expect

    errors: list[str] = []
    async with ledger_gateway(unpriced=3) as (url, _), chromium_browser() as browser:
        doc = await get_json(url + "/cost")
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        page = await context.new_page()
        watch(page, errors)
        await page.goto(url + "/ui")
        totals = doc["totals"]
        assert totals["unpriced_requests"] == 3 and totals["cost_usd"] is not None
        figure = page.locator("#cost-figure")
        money = await page.evaluate("(v) => dollars(v)", totals["cost_usd"])
        await expect(figure).to_have_text(f"{money} + 3 unpriced requests", timeout=WAIT_MS)
        # The shipped catalog's age, as the real route tells it: said when over six months.
        catalog = doc["catalog"]
        notice = page.locator("#catalog-notice")
        if catalog["stale"]:
            await expect(notice).to_be_visible()
            await expect(notice).to_have_text(
                f"price catalog dated {catalog['date']} ({catalog['age_days']:,} days old): "
                'prices may be out of date; add [prices."MODEL"] in the config'
            )
        else:
            await expect(notice).to_be_hidden()
        # each way: a stale catalog is said, a fresh one says nothing; a cost with no priced
        # row at all is "—"
        shown = await page.evaluate(
            """() => {
              drawNotices({catalog: {date: "2025-01-02", age_days: 335, stale: true}});
              const stale = document.getElementById("catalog-notice");
              const said = [stale.hidden, stale.textContent];
              drawNotices({catalog: {date: "2026-11-30", age_days: 3, stale: false}});
              return [...said, document.getElementById("catalog-notice").hidden,
                      priced(null, 3).textContent];
            }"""
        )
        assert shown == [
            False,
            "price catalog dated 2025-01-02 (335 days old): prices may be out of date; "
            'add [prices."MODEL"] in the config',
            True,
            "— (3 unpriced)",
        ]
        await context.close()
    assert errors == []
