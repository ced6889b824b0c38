"""What the dashboard's browser tests share: the system's Chromium (or a skip), the artifacts
folder, a realistic ledger written through the ledger's own store, and the page's layout
checks (overflow, overlapping boxes, clipped text), run in the page.

The ledger (``demo_rows``) is three sessions, priced with the shipped catalog as the
recorder prices them:

* ``refactor-auth``: hybrid mode on gpt-4.1, 24 client requests over the last three hours,
  an epoch boundary every eight; the state lane's own rounds (``cause="state"``) included. Its
  pass-through estimate is the growing history a pass-through would have sent: a saving.
* ``quick-fix``: mode off on claude-sonnet-4-5 (Anthropic's wire, the client's own cache
  breakpoints), six requests in the last 40 minutes; the estimate is the recorded cost, so
  saved is exactly 0.
* ``tiny-script`` (with ``loss=True``): hybrid on gpt-4.1-mini two days ago, three short
  requests whose state rounds cost more than they saved: a loss.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from skillstate.conversation.model import Usage
from skillstate.economics.ledger.row import Row
from skillstate.economics.prices import builtin_catalog
from skillstate.support import jsonio
from skillstate.testing.gateway import gateway_for

if TYPE_CHECKING:
    from playwright.async_api import Browser, ConsoleMessage, Page, Response

WIDTHS = (390, 1280, 1920)
WAIT_MS = 20_000
"""How long the page may take to show its data: other tests may be loading the machine."""

HYBRID, PASSTHROUGH, LOSS = "refactor-auth", "quick-fix", "tiny-script"
UNPRICED = "qwen-local"


def chromium() -> str:
    """The system's Chromium (Debian's ``chromium``; ``make browser`` installs it), or a
    skip that says why the test cannot run. Playwright never downloads a browser here."""
    pytest.importorskip("playwright", reason="Playwright is not installed: run `make browser`")
    found = shutil.which("chromium")
    if found is None:
        pytest.skip("no `chromium` on PATH: run `make browser` (as root it installs Debian's)")
    return found


def artifacts() -> Path:
    folder = Path(os.environ.get("SKILLSTATE_ARTIFACTS") or Path(__file__).parents[1] / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# --- the ledger ------------------------------------------------------------------------------

_CATALOG = builtin_catalog()


def _cost(model: str, usage: Usage) -> float:
    found = _CATALOG.cost(model, usage)
    assert found is not None, f"{model} is not in the shipped catalog"
    return float(found)


def _row(ts: float, request: str, number: int, session: str, model: str, **given: Any) -> Row:
    usage = Usage(
        input=given.pop("input"),
        output=given.pop("output"),
        cached_input=given.pop("cached", 0),
        cache_write=given.pop("written", 0),
    )
    base: dict[str, Any] = {
        "client_wire": "openai-chat",
        "upstream": "openai",
        "mode": "hybrid",
        "lanes": "state=active",
        "status": 200,
        "streamed": True,
        "overhead_ms": 1.4 + (number % 3) * 0.3,
        "upstream_ms": 900.0,
        "login": "api-key",
    }
    base.update(given)
    return Row(
        ts=ts,
        request_id=request,
        round=number,
        session=session,
        model=model,
        input=usage.input,
        cached_input=usage.cached_input,
        cache_write=usage.cache_write,
        output=usage.output,
        cost_usd=_cost(model, usage),
        **base,
    )


def _passthrough(
    model: str, tokens: int, cached: int, output: int, written: int = 0
) -> dict[str, Any]:
    usage = Usage(input=tokens, output=output, cached_input=cached, cache_write=written)
    return {
        "passthrough_input": tokens,
        "passthrough_cached_input": cached,
        "passthrough_cache_write": written,
        "passthrough_cost_usd": _cost(model, usage),
    }


def _hybrid(now: float) -> list[Row]:
    rows: list[Row] = []
    start, model, head, turn, sigma = now - 3 * 3600, "gpt-4.1", 6_000, 1_800, 1_400
    sent_before = full_before = 0
    for i in range(24):
        ts = start + i * 450
        full = head + turn * i  # what a pass-through sends: the whole history
        kept = i % 8  # turns since the last epoch boundary
        sent = head + (sigma if i >= 8 else 0) + turn * kept
        cached = sent_before if kept else 0  # a boundary changes the prefix
        pt_cached = full_before // 128 * 128 if full_before >= 1024 else 0
        request = f"{HYBRID}-{i}"
        estimate = _passthrough(model, full, pt_cached, 420)
        rows.append(
            _row(ts, request, 0, HYBRID, model, input=sent, cached=cached, output=420, **estimate)
        )
        if i % 4 == 3:  # the model wrote Σ: the gateway answered, one more round
            rows.append(
                _row(
                    ts + 2,
                    request,
                    1,
                    HYBRID,
                    model,
                    input=sent + 200,
                    cached=sent,
                    output=60,
                    cause="state",
                )
            )
        sent_before, full_before = sent, full
    return rows


def _passthrough_session(now: float) -> list[Row]:
    rows: list[Row] = []
    model, head, turn = "claude-sonnet-4-5", 9_000, 2_500
    for i in range(6):
        ts = now - 40 * 60 + i * 360
        tokens = head + turn * i
        cached = head + turn * (i - 1) if i else 0
        written = tokens - cached
        estimate = _passthrough(model, tokens, cached, 700, written)
        rows.append(
            _row(
                ts,
                f"{PASSTHROUGH}-{i}",
                0,
                PASSTHROUGH,
                model,
                input=tokens,
                cached=cached,
                written=written,
                output=700,
                mode="off",
                lanes="",
                client_wire="anthropic-messages",
                upstream="anthropic",
                **estimate,
            )
        )
    return rows


def _loss(now: float) -> list[Row]:
    rows: list[Row] = []
    model = "gpt-4.1-mini"
    for i in range(3):
        ts = now - 2 * 86400 + i * 120
        tokens = 2_000 + 300 * i
        request = f"{LOSS}-{i}"
        estimate = _passthrough(model, tokens, 0, 150)
        rows.append(_row(ts, request, 0, LOSS, model, input=tokens, output=150, **estimate))
        rows.append(
            _row(ts + 2, request, 1, LOSS, model, input=tokens + 250, output=80, cause="state")
        )
    return rows


def unpriced_rows(now: float, number: int) -> list[Row]:
    """``number`` requests to a model no catalog prices (a local server's): cost unknown."""
    return [
        Row(
            ts=now - 300 + i,
            request_id=f"{UNPRICED}-{i}",
            round=0,
            session=UNPRICED,
            client_wire="openai-chat",
            upstream="local-llm",
            model=UNPRICED,
            mode="hybrid",
            lanes="",
            status=200,
            streamed=False,
            input=3_000,
            output=200,
        )
        for i in range(number)
    ]


def demo_rows(now: float, *, loss: bool = True, unpriced: int = 0) -> list[Row]:
    """The ledger above, its latest row a few minutes before ``now`` (Unix seconds), with
    ``unpriced`` requests to an unpriced model besides."""
    rows = _hybrid(now) + _passthrough_session(now) + (_loss(now) if loss else [])
    return rows + unpriced_rows(now, unpriced)


# --- the page's layout ---------------------------------------------------------------------

#: Groups of boxes that must not overlap one another (each selector lists one group's members,
#: checked pairwise), and the elements whose text must not be cut.
LAYOUT = r"""
() => {
  const problems = [];
  const root = document.documentElement;
  if (root.scrollWidth > window.innerWidth) {
    problems.push(`page overflows: scrollWidth ${root.scrollWidth} > ${window.innerWidth}`);
  }
  const shown = (node) => {
    const r = node.getBoundingClientRect();
    return r.width > 0 && r.height > 0 ? r : null;
  };
  const name = (node) => node.id ? `#${node.id}` :
    `${node.tagName.toLowerCase()}.${node.className}` +
    ` "${(node.textContent || "").trim().slice(0, 30)}"`;
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
    Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
  const groups = ["header > *", "main > *", ".filters > *", ".headline > .card",
    ".card > *", ".columns > .panel", ".panel > *", "dl > *", "#chart-hourly text",
    "#chart-models text"];
  for (const selector of groups) {
    const parents = new Map();
    for (const node of document.querySelectorAll(selector)) {
      const key = node.parentNode;
      if (!parents.has(key)) parents.set(key, []);
      parents.get(key).push(node);
    }
    for (const nodes of parents.values()) {
      const boxes = nodes.map((node) => [node, shown(node)]).filter(([, r]) => r);
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          if (overlap(boxes[i][1], boxes[j][1])) {
            problems.push(`${selector}: ${name(boxes[i][0])} overlaps ${name(boxes[j][0])}`);
          }
        }
      }
    }
  }
  const labelled = ["h1", "h2", "h3", ".label", ".status", ".span", ".notice", ".filter",
    ".card-title", ".big", ".card-sub", "dt", "dd", "figcaption", "caption", ".note",
    "footer p", ".reset"];
  for (const node of document.querySelectorAll(labelled.join(", "))) {
    if (shown(node) && node.scrollWidth > node.clientWidth + 1) {
      const widths = `scrollWidth ${node.scrollWidth} > ${node.clientWidth}`;
      problems.push(`text cut: ${name(node)} ${widths}`);
    }
  }
  for (const svg of document.querySelectorAll("svg.chart")) {
    const frame = svg.getBoundingClientRect();
    for (const text of svg.querySelectorAll("text")) {
      const r = text.getBoundingClientRect();
      if (r.left < frame.left - 0.5 || r.right > frame.right + 0.5 || r.top < frame.top - 0.5 ||
          r.bottom > frame.bottom + 0.5) {
        problems.push(`label cut: ${svg.id} "${text.textContent}"`);
      }
    }
  }
  return problems;
}
"""


# --- a gateway with that ledger, and the browser ---------------------------------------------


@contextlib.asynccontextmanager
async def ledger_gateway(
    *, loss: bool = True, unpriced: int = 0
) -> AsyncIterator[tuple[str, float]]:
    """A gateway (no upstream behind it) whose ledger holds ``demo_rows``: its URL and the
    ``now`` the rows are dated from."""
    now = time.time()
    async with gateway_for("http://127.0.0.1:9") as gateway:
        recorder = gateway.context.recorder
        assert recorder is not None
        await recorder.ledger.append(demo_rows(now, loss=loss, unpriced=unpriced))
        yield gateway.url, now


@contextlib.asynccontextmanager
async def chromium_browser() -> AsyncIterator[Browser]:
    executable = chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            yield browser
        finally:
            await browser.close()


async def open_page(
    browser: Browser, url: str, width: int, errors: list[str], timezone: str = "UTC"
) -> Page:
    """The dashboard at ``url`` (``/ui`` and its query) in a window ``width`` pixels wide, in
    ``timezone``, once it has drawn its data; console errors go to ``errors``."""
    from playwright.async_api import expect

    context = await browser.new_context(
        viewport={"width": width, "height": 900}, timezone_id=timezone
    )
    page = await context.new_page()
    watch(page, errors)
    await page.goto(url)
    # Locators, not wait_for_function: its string predicates are eval'd in the page, which
    # the page's CSP (no 'unsafe-eval') refuses, as it should.
    await expect(page.locator("#status")).to_have_text(re.compile(r"^updated"), timeout=WAIT_MS)
    return page


def watch(page: Page, errors: list[str]) -> None:
    """Script errors and failed answers of ``page`` go to ``errors``; a session without state
    (``/state?session=`` answers 404, which the page says in words) is not one."""

    def answered(reply: Response) -> None:
        if reply.status >= 400 and not (reply.status == 404 and "/state?session=" in reply.url):
            errors.append(f"{reply.status} from {reply.url}")

    def logged(message: ConsoleMessage) -> None:
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            errors.append(message.text)

    page.on("console", logged)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("response", answered)


async def get_json(url: str) -> Any:
    async with aiohttp.ClientSession() as http, http.get(url) as reply:
        assert reply.status == 200, await reply.text()
        return jsonio.loads(await reply.read())
