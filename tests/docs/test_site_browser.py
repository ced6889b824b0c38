"""The documentation site in a real browser, served by the gateway at /docs: every page at 390,
1280 and 1920 px wide has no horizontal overflow and no overlapping header, navigation, content
and footer, runs without a console error (its Content-Security-Policy refuses nothing the site
needs), and every link between its pages resolves, anchors included.

The site is the one ``make docs`` builds (tests/docs/conftest.py); headless Chromium is
Debian's, driven by Playwright, one browser and one page reused for every page and width.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import aiohttp
import pytest

from skillstate.testing.gateway import gateway_for

pytestmark = pytest.mark.browser

WIDTHS = (390, 1280, 1920)
HEIGHT = 900
#: The theme's boxes that must not overlap where they are shown.
BOXES = {
    "header": ".md-header",
    "navigation": ".md-sidebar--primary",
    "contents": ".md-sidebar--secondary",
    "content": ".md-content",
    "footer": ".md-footer",
}
_MEASURE = """(selectors) => {
  const shown = {};
  for (const [name, selector] of Object.entries(selectors)) {
    const node = document.querySelector(selector);
    if (!node) continue;
    const style = getComputedStyle(node);
    const box = node.getBoundingClientRect();
    const visible = style.display !== 'none' && style.visibility !== 'hidden'
      && box.width > 0 && box.height > 0
      && box.right > 0 && box.left < window.innerWidth;
    if (visible) {
      shown[name] = {left: box.left, top: box.top + window.scrollY,
                     right: box.right, bottom: box.bottom + window.scrollY};
    }
  }
  return {shown, scrollWidth: document.documentElement.scrollWidth,
          innerWidth: window.innerWidth};
}"""


def chromium() -> str:
    """The system's Chromium, or a skip that says why (as tests/e2e/test_dashboard.py)."""
    import shutil

    pytest.importorskip("playwright", reason="Playwright is not installed: run `make browser`")
    found = shutil.which("chromium")
    if found is None:
        pytest.skip("no `chromium` on PATH: run `make browser` (as root it installs Debian's)")
    return found


class _Page(HTMLParser):
    """The ``<a href>`` targets and the element ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for name in ("id", "name"):
            if found.get(name):
                self.ids.add(str(found[name]))
        if tag == "a" and found.get("href"):
            self.links.append(str(found["href"]))


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


async def crawl(http: aiohttp.ClientSession, root: str) -> tuple[list[str], list[str]]:
    """Every page reachable by links from ``root`` (a URL ending in /docs/), and every broken
    link found on the way: a target that is not 200, an anchor its page lacks, or a link out of
    /docs on the gateway's own origin."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(root))
    pages: dict[str, _Page] = {}
    statuses: dict[str, int] = {}
    queue = [root]
    broken: list[str] = []
    while queue:
        url = queue.pop()
        if url in statuses:
            continue
        async with http.get(url) as reply:
            statuses[url] = reply.status
            if reply.status != 200 or reply.content_type != "text/html":
                continue
            pages[url] = parse(await reply.text())
        for href in pages[url].links:
            target = urljoin(url, href)
            if not target.startswith(origin + "/"):
                continue  # another host: not the site's to resolve
            if not urlsplit(target).path.startswith("/docs/"):
                broken.append(f"{url}: {href} leaves /docs")
                continue
            queue.append(urldefrag(target).url)
    for url, page in pages.items():
        for href in page.links:
            target, fragment = urldefrag(urljoin(url, href))
            if not target.startswith(origin + "/docs/"):
                continue
            if statuses.get(target) != 200:
                broken.append(f"{url}: {href} -> HTTP {statuses.get(target)}")
            elif fragment and target in pages and unquote(fragment) not in pages[target].ids:
                broken.append(f"{url}: {href} -> no #{fragment} there")
    return sorted(pages), broken


def built_pages(site: Path) -> set[str]:
    """The pages the build wrote (its 404 page is reached by no link)."""
    return {p.relative_to(site).as_posix() for p in site.glob("*.html")} - {"404.html"}


def overlaps(shown: dict[str, dict[str, float]]) -> list[str]:
    """The pairs of shown boxes whose areas intersect (by more than a pixel each way)."""
    names = sorted(shown)
    found = []
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            a, b = shown[first], shown[second]
            width = min(a["right"], b["right"]) - max(a["left"], b["left"])
            height = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
            if width > 1 and height > 1:
                found.append(f"{first} and {second} ({width:.0f}x{height:.0f} px)")
    return found


def test_overlaps_are_found_between_shown_boxes_only_past_a_pixel() -> None:
    boxes = {
        "header": {"left": 0, "top": 0, "right": 1280, "bottom": 48},
        "content": {"left": 300, "top": 48, "right": 1000, "bottom": 900},
        "navigation": {"left": 0, "top": 47.5, "right": 301, "bottom": 900},
        "footer": {"left": 0, "top": 890, "right": 1280, "bottom": 950},
    }
    assert overlaps(boxes) == [
        "content and footer (700x10 px)",
        "footer and navigation (301x10 px)",
    ]


async def test_every_page_fits_every_width_and_every_link_resolves(site: Path) -> None:
    executable = chromium()
    from playwright.async_api import async_playwright

    built = built_pages(site)
    assert "index.html" in built
    async with (
        gateway_for("http://127.0.0.1:9") as gateway,
        aiohttp.ClientSession() as http,
    ):
        pages, broken = await crawl(http, gateway.url + "/docs/")
        assert broken == []
        assert {url.rsplit("/docs/", 1)[1] or "index.html" for url in pages} == built

        problems: list[str] = []
        errors: list[str] = []
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=executable, headless=True)
            try:
                page = await browser.new_page()
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda error: errors.append(str(error)))
                for width in WIDTHS:
                    # A fresh load at each width: a resize alone would measure the theme's
                    # transitions (its search box widens over a few frames) mid-way.
                    await page.set_viewport_size({"width": width, "height": HEIGHT})
                    for url in pages:
                        # The theme's script ends the body, so the style sheets are in.
                        await page.goto(url, wait_until="domcontentloaded")
                        measured = await page.evaluate(_MEASURE, BOXES)
                        where = f"{url} at {width} px"
                        if measured["scrollWidth"] > measured["innerWidth"]:
                            problems.append(
                                f"{where}: {measured['scrollWidth']} px wide, "
                                f"{measured['innerWidth']} px shown"
                            )
                        if "content" not in measured["shown"]:
                            problems.append(f"{where}: no content shown")
                        problems.extend(f"{where}: {o}" for o in overlaps(measured["shown"]))
            finally:
                await browser.close()
        assert problems == []
        assert errors == []
