"""README.md: its first screen shows the install line and a result in dollars, its headline
table is the one `make demo` prints, and every relative link in it leads to a file of the
repository (or a heading of the README itself)."""

from __future__ import annotations

import re
from pathlib import Path

from skillstate.testing.demo_arms import Arm
from skillstate.testing.demo_report import table
from skillstate.testing.long_session import Transcript

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FIRST_SCREEN = 40
"""Lines a reader sees before scrolling."""

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_DOLLARS = re.compile(r"\$\d+\.\d\d")


def _lines() -> list[str]:
    return README.read_text(encoding="utf-8").splitlines()


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_first_screen_has_the_install_line_and_a_dollar_figure() -> None:
    screen = "\n".join(_lines()[:FIRST_SCREEN])
    assert "pipx install ." in screen
    assert "skillstate --version" in screen
    assert _DOLLARS.search(screen), "no $ figure on the README's first screen"
    assert "make demo" in screen  # the command that reproduces the figure


def test_the_headline_table_is_the_one_make_demo_prints() -> None:
    arm = Arm("off", {}, [], {}, Transcript(), (), 0)
    header = table(arm, arm)[0]
    assert header in _lines()[:FIRST_SCREEN]


def test_every_relative_link_resolves() -> None:
    text = README.read_text(encoding="utf-8")
    anchors = {_slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}
    targets = _LINK.findall(text)
    assert targets, "the link pattern found nothing"
    broken = []
    for target in targets:
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        if not path:
            if anchor not in anchors:
                broken.append(target)
        elif not (ROOT / path).exists():
            broken.append(target)
    assert not broken, f"README.md links to what is not there: {broken}"


def test_the_link_check_sees_a_broken_link() -> None:
    assert _LINK.findall("see [a](docs/nowhere.md) and ![b](docs/ui.png)") == [
        "docs/nowhere.md",
        "docs/ui.png",
    ]
    assert _slug("How it saves, in plain words") == "how-it-saves-in-plain-words"
