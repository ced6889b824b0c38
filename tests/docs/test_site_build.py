"""``make docs``'s site: built with ``--strict`` (a broken link or anchor fails it), every page
of the nav present, nothing fetched from another host, SECURITY.md included rather than copied."""

from __future__ import annotations

import re
from pathlib import Path

import yaml  # mkdocs' own dependency
from docs_site_build import CONFIG, ROOT

_ASSET = re.compile(
    r"<(?:script|link|img|source|iframe|video|audio|embed)\b[^>]*?\b(?:src|href|srcset)="
    r"[\"']([^\"']*)[\"']",
    re.I,
)
_CSS_URL = re.compile(r"url\(\s*[\"']?([^\"')]*)", re.I)


def nav_pages() -> list[str]:
    """Every Markdown page the nav of mkdocs.yml names."""
    # mkdocs.yml holds no custom tags; the safe loader reads it.
    config = yaml.safe_load(CONFIG.read_text())
    found: list[str] = []

    def walk(entries: list[object]) -> None:
        for entry in entries:
            assert isinstance(entry, dict)
            for value in entry.values():
                if isinstance(value, list):
                    walk(value)
                else:
                    found.append(str(value))

    walk(config["nav"])
    return found


def test_every_page_of_the_nav_is_built(site: Path) -> None:
    pages = nav_pages()
    assert "quickstart.md" in pages and "configuration.md" in pages
    assert "troubleshooting.md" in pages and "security.md" in pages
    for page in pages:
        assert (site / page.replace(".md", ".html")).is_file(), page


def test_every_markdown_page_is_in_the_nav() -> None:
    """A page left out of the nav would be built but never found."""
    written = {path.name for path in (ROOT / "docs").glob("*.md")}
    assert written == set(nav_pages())


def test_the_site_fetches_nothing_from_another_host(site: Path) -> None:
    """No font, script, style sheet or image from a CDN: the site works offline, and the
    gateway's Content-Security-Policy (its own files only) would refuse them anyway."""
    offenders = []
    for path in site.rglob("*.html"):
        for url in _ASSET.findall(path.read_text()):
            if re.match(r"(?:[a-z]+:)?//", url, re.I):
                offenders.append(f"{path.relative_to(site)}: {url}")
    for path in site.rglob("*.css"):
        for url in _CSS_URL.findall(path.read_text()):
            if re.match(r"(?:https?:)?//", url.strip(), re.I):
                offenders.append(f"{path.relative_to(site)}: {url}")
    assert offenders == []


def test_the_security_page_is_security_md(site: Path) -> None:
    heading = next(
        line for line in (ROOT / "SECURITY.md").read_text().splitlines() if line.startswith("## ")
    )
    page = (site / "security.html").read_text()
    assert heading.removeprefix("## ").split(",")[0] in page
    assert "--8&lt;--" not in page and "--8<--" not in page
