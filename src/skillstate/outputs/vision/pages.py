"""Text drawn on page images, with Pillow only (its embedded font: nothing is fetched).

``lay_out(text, layout)`` cuts a text into the lines each page holds: tabs expanded, colour
codes and control characters cleaned as views read them (``views.text.clean``), long lines
wrapped at the page's width (at a space where one is near, else inside the word).
``draw(lines, layout)`` draws one page's lines, black on white, in grayscale, and returns
its PNG; the last page of a text is cut to the height its lines take.

Deterministic: the same lines and layout give the same PNG bytes with one Pillow (no
timestamp, no text chunk, no metadata is written; zlib's output depends on its input only),
so a page, once in a history, is the same bytes on every later request. Pillow is imported
when a page is laid out or drawn, not before: the gateway runs without it while the lane
that needs it is off (``require_pillow`` says so clearly where it is on).
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skillstate.outputs.views.text import clean, split_lines

TAB = 4
"""Spaces a tab stands for on a page."""


class MissingPillow(RuntimeError):
    """The vision lane is on and Pillow is not installed."""


@dataclass(frozen=True, slots=True)
class Layout:
    """A page's size in pixels, the font's size, and the blank margin around the text."""

    width: int = 768
    height: int = 1024
    font_size: int = 12
    margin: int = 12

    @property
    def line_height(self) -> int:
        ascent, descent = _font(self.font_size).getmetrics()
        return int(ascent + descent)

    @property
    def lines_per_page(self) -> int:
        return max(1, (self.height - 2 * self.margin) // self.line_height)


@dataclass(frozen=True, slots=True)
class Page:
    png: bytes
    width: int
    height: int


def require_pillow() -> None:
    """Raise ``MissingPillow`` naming the extra that brings it, where Pillow cannot be
    imported (or cannot draw its scalable font)."""
    try:
        from PIL import features
    except ImportError as exc:
        raise MissingPillow(
            "the vision lane draws pages with Pillow, which is not installed: install the "
            "[vision] extra (from a clone: pipx install '.[vision]' or pip install "
            "'.[vision]'; or pip install Pillow beside skillstate), or switch the lane off "
            "([lanes.vision] enabled = false)"
        ) from exc
    if not features.check("freetype2"):  # load_default(size=...) needs it for its font
        raise MissingPillow(
            "the vision lane draws pages with Pillow's FreeType font, and this Pillow was "
            "built without FreeType: install a Pillow wheel, or switch the lane off"
        )


def lay_out(text: str, layout: Layout) -> list[list[str]]:
    """The lines of each page ``text`` fills (see the module)."""
    room = layout.width - 2 * layout.margin
    measure = _font(layout.font_size).getlength
    lines: list[str] = []
    for line in split_lines(clean(text.expandtabs(TAB))):
        lines += wrap(line, room, measure)
    per_page = layout.lines_per_page
    return [lines[start : start + per_page] for start in range(0, len(lines), per_page)]


def wrap(line: str, room: float, measure: Callable[[str], float]) -> list[str]:
    """``line`` as the pieces that each fit ``room`` pixels: cut at the last space of the
    piece where it lies in its second half, else where the width runs out."""
    pieces: list[str] = []
    while line and measure(line) > room:
        cut = _fitting(line, room, measure)
        space = line.rfind(" ", 0, cut + 1)  # the space itself need not fit
        if space > cut // 2:
            cut = space + 1
        pieces.append(line[:cut].rstrip(" "))
        line = line[cut:]
    pieces.append(line)
    return pieces


def _fitting(line: str, room: float, measure: Callable[[str], float]) -> int:
    """The most leading characters of ``line`` that fit ``room`` (at least one)."""
    low, high = 1, len(line)
    while low < high:
        middle = (low + high + 1) // 2
        if measure(line[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    return low


def draw(lines: list[str], layout: Layout, *, last: bool = False) -> Page:
    """One page of ``lines`` as a grayscale PNG (``last``: cut to the height they take)."""
    image_module, draw_module = _pillow()
    height = page_height(len(lines), layout, last=last)
    image = image_module.new("L", (layout.width, height), 255)
    pen = draw_module.Draw(image)
    font = _font(layout.font_size)
    for row, line in enumerate(lines):
        pen.text((layout.margin, layout.margin + row * layout.line_height), line, 0, font)
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=6)
    return Page(out.getvalue(), layout.width, height)


def page_height(lines: int, layout: Layout, *, last: bool) -> int:
    """The height of a page of ``lines`` lines: the layout's, or for the last page of a text
    what its lines take."""
    if not last:
        return layout.height
    return min(layout.height, 2 * layout.margin + lines * layout.line_height)


def _pillow() -> tuple[Any, Any]:
    require_pillow()
    from PIL import Image, ImageDraw

    return Image, ImageDraw


@functools.cache
def _font(size: int) -> Any:
    """Pillow's embedded scalable font at ``size`` px (``load_default``: no file is read from
    or fetched to the machine)."""
    require_pillow()
    from PIL import ImageFont

    return ImageFont.load_default(size=size)
