"""The images a request body holds, read from its bytes without decoding it: how many, and
how many of its bytes are their base64 data.

A key's budget and a rate limit count a body's input from its bytes
(``economics.allowance``); an image is billed by its pixels, not by the bytes that carry it
(a screenshot's 2 MB of base64 is some 1,600 tokens by Anthropic's rule), so its data is
counted apart. The image parts of the three wires: Chat's ``{"type": "image_url", ...}``,
Responses' ``{"type": "input_image", ...}`` (and a computer call's ``computer_screenshot``),
Messages' ``{"type": "image", ...}``; a part's data follows its ``type`` as a
``data:image/...;base64,`` URL (Chat, Responses) or its source's ``"data"`` (Messages).

The contract, for a bound that must never count less than there is: every image part is
found, whatever its spacing (one quoted inside a string, a tool's output, is escaped there
and is text); only data that follows its part's ``type`` within ``_REACH`` bytes, inside the
part, after its image media type, is set apart from the text. Data a client put before its
part's ``type`` or its media type, a document's (a PDF's) and any other base64 stay counted
as the text they are: more than they cost, never less.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PART = re.compile(rb'"type"\s*:\s*"(?:image_url|input_image|image|computer_screenshot)"')
_DATA = re.compile(rb';base64,|"data"\s*:\s*"')
_REACH = 160
"""How far after an image part's ``type`` its data may begin (the longest shape,
Messages' ``"source": {"type": "base64", "media_type": "image/webp", "data": "``, with a
client's spacing, is under 100 bytes)."""
_LEAST = 256
"""A run of data shorter than this is left counted as text: set apart, it would save
nothing worth the look."""


@dataclass(frozen=True, slots=True)
class Images:
    """The image parts of a body, and the bytes of base64 data found in them."""

    count: int = 0
    data_bytes: int = 0


NONE = Images()


def images_in(body: bytes) -> Images:
    """The image parts ``body`` holds and the bytes of their data (``Images``)."""
    count = data = 0
    found = _PART.search(body)
    while found is not None:
        count += 1
        end = found.end()
        start = _DATA.search(body, end, end + _REACH)
        if start is not None and _its_own(body[end : start.start() + 1]):
            close = body.find(b'"', start.end())
            if close - start.end() >= _LEAST:
                data += close - start.end()
                end = close
        found = _PART.search(body, end)
    return Images(count, data) if count else NONE


def _its_own(between: bytes) -> bool:
    """Whether data found after an image part's ``type`` is that image's: nothing between
    them closes the part, and an image's media type is named there (``data:image/png``,
    ``"media_type": "image/png"``)."""
    return b"}" not in between and b"image/" in between
