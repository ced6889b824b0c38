"""What a page image costs in input tokens, by the formula each provider publishes for the
wire it is sent on. Pure arithmetic over a page's pixel size; no image is opened.

* OpenAI's wires (Chat Completions, Responses), ``detail: high``: the image is scaled down
  to fit a 2048 x 2048 square, then down so that its shortest side is at most 768 px; the
  tokens are 85 plus 170 for each 512 px tile the result covers
  (``85 + 170 * ceil(w / 512) * ceil(h / 512)``). A 1024 x 1024 image: 768 x 768, 4 tiles,
  765 tokens.
* Anthropic Messages: the image is scaled down to fit 1568 px on its long side; the tokens
  are about ``w * h / 750``. A 1000 x 1000 image: 1,334 tokens.

Scaling keeps the aspect ratio and never enlarges; sizes are rounded down to whole pixels
after each step, as the providers' own examples do.
"""

from __future__ import annotations

import math

from skillstate.conversation import Wire

OPENAI_BASE = 85
OPENAI_TILE = 170
OPENAI_TILE_PX = 512
OPENAI_FIT = 2048
OPENAI_SHORT_SIDE = 768
ANTHROPIC_LONG_SIDE = 1568
ANTHROPIC_PIXELS_PER_TOKEN = 750


def openai_tokens(width: int, height: int) -> int:
    """OpenAI's high-detail tile formula (see the module)."""
    width, height = _fit(width, height, OPENAI_FIT / max(width, height))
    width, height = _fit(width, height, OPENAI_SHORT_SIDE / min(width, height))
    tiles = math.ceil(width / OPENAI_TILE_PX) * math.ceil(height / OPENAI_TILE_PX)
    return OPENAI_BASE + OPENAI_TILE * tiles


def anthropic_tokens(width: int, height: int) -> int:
    """Anthropic's ``w * h / 750`` after fitting 1568 px on the long side (see the module)."""
    width, height = _fit(width, height, ANTHROPIC_LONG_SIDE / max(width, height))
    return math.ceil(width * height / ANTHROPIC_PIXELS_PER_TOKEN)


def image_tokens(wire: Wire, width: int, height: int) -> int:
    """The tokens of one ``width`` x ``height`` image sent upstream on ``wire``."""
    if wire is Wire.MESSAGES:
        return anthropic_tokens(width, height)
    return openai_tokens(width, height)


def _fit(width: int, height: int, scale: float) -> tuple[int, int]:
    """``width`` x ``height`` scaled by ``scale`` where that shrinks it, else as it is."""
    if scale >= 1:
        return width, height
    return max(1, int(width * scale)), max(1, int(height * scale))
