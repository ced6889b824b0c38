"""The dashboard (GET /ui) in a real browser: a scripted hybrid session goes through the
gateway, then headless Chromium (driven by Playwright, installed by ``make browser``) loads the
page and must show what /cost and /state say. A full-page screenshot is kept under
``$SKILLSTATE_ARTIFACTS`` (default ``tests/artifacts/``); docs/ui.png is one of them."""

from __future__ import annotations

import json
import re
from typing import Any

import aiohttp
import pytest
from dashboard_support import WAIT_MS, artifacts, chromium

from skillstate.support import jsonio
from skillstate.testing import RecordedRequest, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

pytestmark = pytest.mark.browser

SESSION = "dashboard-demo"
SUBSCRIBER = "claude-subscriber"
"""A Claude Code session with a Pro/Max login, which the gateway passes through untouched."""
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        },
    }
]
STEPS = ("List the project.", "Read the config.", "Run the tests.", "Sum up.")
#: One verbatim turn after a boundary, so that the short session has turns to collapse.
COLLAPSE = '{"keep_recent_turns": 1}'
NOTE = "[skillstate]"
STATE_ANSWER = "State updated"


def model(request: RecordedRequest) -> Reply:
    """The scripted model, for each step of ``STEPS``: it notes the step in Σ (the gateway
    answers ``skill_state`` itself), runs one ``shell`` command (the client answers it), notes
    the output in Σ, and answers."""
    messages = [m for m in request.json["messages"] if not _note(m)]
    step = max(i for i, m in enumerate(messages) if m["role"] == "user")
    since = messages[step + 1 :]
    ran = [m for m in since if m["role"] == "tool" and not m["content"].startswith(STATE_ANSWER)]
    if not since:
        patch = {"findings": {messages[step]["content"]: "started"}}
        return Reply(calls=[ScriptedCall("skill_state", {"patch": patch})], output_tokens=12)
    if since[-1]["role"] == "tool" and since[-1]["content"].startswith(STATE_ANSWER):
        if ran:
            return Reply(text=f"Done: {ran[-1]['content']}", output_tokens=20)
        return Reply(calls=[ScriptedCall("shell", {"cmd": f"echo step {step}"})], output_tokens=9)
    patch = {"findings": {f"output of step {step}": since[-1]["content"]}}
    return Reply(calls=[ScriptedCall("skill_state", {"patch": patch})], output_tokens=15)


def _note(message: dict[str, Any]) -> bool:
    return message["role"] == "user" and str(message.get("content", "")).startswith(NOTE)


async def play(http: aiohttp.ClientSession, url: str) -> None:
    """The client's side of the session: each step, its ``shell`` call run, and (before the
    last step) an epoch boundary forced, so the session has head, collapsed and verbatim
    turns and an archive ref to show."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent."}]
    headers = {"x-skillstate-session": SESSION}
    for number, text in enumerate(STEPS):
        if number == len(STEPS) - 1:
            async with http.post(f"{url}/state/collapse", params={"session": SESSION}) as r:
                assert r.status == 202
        history.append({"role": "user", "content": text})
        while True:
            body = {"model": "test-model", "messages": history, "tools": TOOLS}
            async with http.post(f"{url}/v1/chat/completions", json=body, headers=headers) as r:
                assert r.status == 200, await r.text()
                message = (await r.json())["choices"][0]["message"]
            history.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                break
            for call in calls:
                assert call["function"]["name"] == "shell"
                cmd = json.loads(call["function"]["arguments"])["cmd"]
                history.append({"role": "tool", "tool_call_id": call["id"], "content": cmd[5:]})


async def subscribe(http: aiohttp.ClientSession, url: str) -> None:
    """One request of Claude Code logged in with a subscription (a token of the test's own
    making), on its own wire and a priced model: the ledger counts it at no per-token price."""
    headers = {
        "authorization": "Bearer sk-ant-oat01-" + "d" * 40,
        "x-claude-code-session-id": SUBSCRIBER,
        "anthropic-version": "2023-06-01",
    }
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "List the project."}],
    }
    async with http.post(f"{url}/v1/messages", json=body, headers=headers) as r:
        assert r.status == 200, await r.text()
        assert r.headers["x-skillstate-login"] == "anthropic-subscription"


async def get(http: aiohttp.ClientSession, url: str) -> Any:
    async with http.get(url) as reply:
        assert reply.status == 200
        return jsonio.loads(await reply.read())


async def test_the_dashboard_shows_the_ledger_and_opens_a_session() -> None:
    executable = chromium()
    from playwright.async_api import async_playwright, expect

    environ = {"SKILLSTATE_COLLAPSE": COLLAPSE}
    # skill_state from the first request: the scripted model patches Σ through it at once
    settings = {"mode": "hybrid", "collapse": {"passthrough_until_boundary": False}}
    async with (
        ScriptedUpstream(model) as upstream,
        gateway_for(upstream.url, settings=settings, environ=environ) as gateway,
        aiohttp.ClientSession() as http,
    ):
        await play(http, gateway.url)
        await subscribe(http, gateway.url)
        cost = await get(http, gateway.url + "/cost")
        rows = (await get(http, gateway.url + "/cost/requests?limit=20"))["requests"]
        shown = await get(http, f"{gateway.url}/state?session={SESSION}")
        assert {turn["where"] for turn in shown["turns"]} == {"head", "collapsed", "verbatim"}
        assert shown["archive"]

        errors: list[str] = []
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=executable, headless=True)
            try:
                page = await browser.new_page(viewport={"width": 1280, "height": 900})
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda error: errors.append(str(error)))
                await page.goto(gateway.url + "/ui")
                # Locators, not wait_for_function: its string predicates are eval'd in the
                # page, which the page's CSP (no 'unsafe-eval') refuses, as it should.
                await expect(page.locator("#status")).to_have_text(
                    re.compile(r"^updated"), timeout=WAIT_MS
                )
                totals = cost["totals"]
                shown_requests = await page.text_content('#measured [data-field="requests"]')
                assert shown_requests == f"{totals['requests']:,}"
                recorded = await page.text_content('#cost-figure[data-field="cost_usd"]')
                if totals["cost_usd"] is None:  # no price: said so, never $0
                    unpriced = totals["unpriced_requests"]
                    assert recorded == f"— ({unpriced:,} unpriced)"
                else:
                    assert recorded is not None and recorded.startswith("$")
                # Until every model has a price there is no saving to show: the page's own
                # formatters say how one would look.
                shapes = await page.evaluate(
                    "[saved(0.25), saved(-0.5), saved(null), money(null), money(0),"
                    " priced(1.2, 3), priced(1234.5, 1), priced(null, 0)]"
                    ".map((node) => [node.className, node.textContent])"
                )
                assert shapes == [
                    ["saving", "$0.2500 saved"],
                    ["loss", "\u2212$0.5000 lost"],
                    ["unpriced", "—"],
                    ["unpriced", "unpriced"],
                    ["money", "$0.0000"],
                    ["priced", "$1.20 + 3 unpriced requests"],
                    ["priced", "$1,234.50 + 1 unpriced request"],
                    ["priced", "—"],
                ]
                for chart in ("#chart-models", "#chart-hourly"):
                    points = int(await page.get_attribute(chart, "data-points") or 0)
                    assert points > 0, chart
                assert len(await page.query_selector_all("#chart-models rect")) == len(
                    cost["by_model"]
                )

                # Which login each session used and what the gateway did with it.
                login = '[data-field="login"]'
                sub = page.locator(f'#sessions tr[data-session="{SUBSCRIBER}"]')
                assert await sub.locator(login).text_content() == (
                    "anthropic-subscription: passed through untouched (subscription)"
                )
                assert await sub.locator("td:nth-child(7)").text_content() == "subscription"
                row = page.locator(f'#sessions tr[data-session="{SESSION}"]')
                assert await row.locator(login).text_content() == "none: rewritten"
                carried = await page.text_content('#measured [data-field="logins"]')
                assert carried == f"anthropic-subscription 1, none {totals['logins']['none']}"
                sub_line = await page.text_content("#cost-sub") or ""
                assert "1 request billed by a subscription" in sub_line
                logins = await page.locator(f"#requests tbody {login}").all_text_contents()
                assert logins[0] == "anthropic-subscription" and set(logins[1:]) == {"none"}
                assert await row.count() == 1
                await row.click()
                sigma = page.locator("#detail-sigma")
                await sigma.wait_for(state="visible")
                await expect(sigma).to_contain_text('"findings"', timeout=WAIT_MS)
                assert json.loads(await sigma.text_content() or "") == shown["state"]
                wheres = await page.locator(
                    "#detail-turns tbody td:nth-child(4)"
                ).all_text_contents()
                assert set(wheres) == {"head", "collapsed", "verbatim"}
                refs = await page.locator("#detail-archive tbody code").all_text_contents()
                assert refs == [entry["ref"] for entry in shown["archive"]]
                line = await page.text_content("#detail-cost") or ""
                [group] = [g for g in cost["by_session"] if g["session"] == SESSION]
                assert line.startswith(f"{group['requests']:,} upstream requests")
                verdicts = ", ".join(f"{v} {n:,}" for v, n in group["cache_verdicts"].items())
                assert group["cache_verdicts"]["first"] == 1
                shown_verdicts = await page.text_content(
                    '#detail-cost [data-field="cache_verdicts"]'
                )
                assert shown_verdicts == f"Provider cache: {verdicts}."
                assert await page.locator("#requests tbody tr").count() == len(rows)

                await page.screenshot(path=str(artifacts() / "dashboard.png"), full_page=True)
            finally:
                await browser.close()
        assert errors == []
