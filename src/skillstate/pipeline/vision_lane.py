"""The text-as-image lane (``vision``): at an epoch boundary, a dense old text output is sent
as page images, where the model reads images and the pages cost clearly fewer tokens.

Old means the tool results of the turns the boundary kept verbatim, all but the newest
``fresh_turns`` (``pipeline.settled``): that request misses the provider's cache from the Σ
message on anyway, and the same outputs sit there on every request of the epoch. It runs
before the ``outputs`` lane (pages keep all of a text, a view does not; that lane takes what
this one leaves) and takes a result of text only, at least ``min_chars`` long.

Such an output becomes, inside its own result (the call stays paired with it), one ``Text``
(a line saying it is shown as N page images and how to recall it exactly, then every exact
identifier of it, ``views.identifiers``) and the PNG pages (``vision.pages``), at most
``max_pages``; a text that needs more is left as it is. The text drawn and the identifiers
listed go through ``redaction`` first: no secret reaches the model in a picture either. The
original is archived exactly, under its content-addressed ref, before the request goes on.

Only where every condition holds: the request's model matches the allowlist (``models``),
the gateway answers ``recall`` in this request (as for ``outputs``: a page the model could not
see behind would lose content for it), and the text's tokens are at least ``min_ratio`` times
the pages' tokens by the formula of the upstream wire's provider (``vision.tokens``), with a
saving left after the line and the identifiers. ``x-skillstate-vision: off`` leaves one
request's outputs as text. The pages are a pure function of the text and the options (the
same PNG bytes every time with one Pillow), and remembered by content.
"""

from __future__ import annotations

import base64
import dataclasses
import fnmatch
from collections import OrderedDict
from dataclasses import dataclass

from skillstate.archive import canonical_span, ref_for
from skillstate.conversation import Image, Message, Part, Request, Role, Text, ToolResult, Wire
from skillstate.economics.tokenizer import count_tokens
from skillstate.outputs.redaction import redact
from skillstate.outputs.views import identifiers
from skillstate.outputs.views.text import count_lines
from skillstate.outputs.vision.pages import Layout, draw, lay_out, page_height, require_pillow
from skillstate.outputs.vision.tokens import image_tokens
from skillstate.pipeline.archived import KnownArchived, text_of
from skillstate.pipeline.lane import ArchiveWrite, LaneContext, LaneOutcome
from skillstate.pipeline.outputs_lane import MIN_BOUNDARY_CHARS
from skillstate.pipeline.settled import settled_results
from skillstate.pipeline.surface import LaneHeader, LaneSpec
from skillstate.state.mode import Mode
from skillstate.state.tools import recall_tool

VISION_KEY = "vision"
"""The lane's name, and so ``LaneContext.extra``'s key for what a request asked
(``x-skillstate-vision``)."""
VISION_VALUES = ("on", "off")

VISION_MODELS = ("gpt-4o*", "gpt-4.1*", "gpt-5*", "claude-*")
"""The models the lane draws pages for unless its table names others: those that read text
in images well (fnmatch patterns over the request's model)."""


@dataclass(frozen=True, slots=True)
class VisionOptions:
    """The ``vision`` lane's. At an epoch boundary, a text output at least ``min_chars`` long
    in the turns the boundary kept (all but the newest ``fresh_turns``) is drawn on at most
    ``max_pages`` page images of ``page_width`` x ``page_height`` px, text ``font_size`` px
    high, where its text tokens are at least ``min_ratio`` times the images' and the request's
    model matches one of ``models`` (fnmatch patterns)."""

    min_chars: int = 4_000
    max_pages: int = 4
    min_ratio: float = 2.0
    page_width: int = 768
    page_height: int = 1024
    font_size: int = 12
    fresh_turns: int = 2
    models: tuple[str, ...] = VISION_MODELS

    def __post_init__(self) -> None:
        models = self.models
        if not isinstance(models, list | tuple) or not all(
            isinstance(m, str) and m for m in models
        ):
            raise ValueError(f"models must be a list of model name patterns, not {models!r}")
        object.__setattr__(self, "models", tuple(models))  # TOML gives a list
        _at_least("min_chars", self.min_chars, MIN_BOUNDARY_CHARS)
        _within("max_pages", self.max_pages, 1, 16)
        _at_least("min_ratio", self.min_ratio, 1.0)
        _within("page_width", self.page_width, 256, 2048)
        _within("page_height", self.page_height, 256, 2048)
        _within("font_size", self.font_size, 8, 32)
        _at_least("fresh_turns", self.fresh_turns, 1)


def _at_least(name: str, value: float, least: float) -> None:
    if value < least:
        raise ValueError(f"{name} must be at least {least}, not {value}")


def _within(name: str, value: int, least: int, most: int) -> None:
    if not least <= value <= most:
        raise ValueError(f"{name} must be from {least} to {most}, not {value}")


GATEWAY_IMAGE = {"by": "gateway"}
"""The hints of a page image: made by the gateway, not sent by the client (the Chat wire,
whose ``tool`` messages hold text only, sends such images in a ``user`` message after the
results: ``protocols.openai_chat.transcript``)."""

VIEW_MARK = "[skillstate view"
MEMO_SIZE = 256
"""Outputs whose pages are remembered, by content and upstream wire."""


@dataclass(frozen=True, slots=True)
class _Drawn:
    """An output's replacement content, the ref of its original and that original's bytes."""

    content: tuple[Text | Image, ...]
    ref: str
    data: bytes
    saved: int
    """Tokens the pages save over the text (after the line and the identifiers)."""
    call_id: str


class VisionLane:
    name = VISION_KEY

    def __init__(self, options: VisionOptions | None = None) -> None:
        self.options = options if options is not None else VisionOptions()
        self.layout = Layout(
            self.options.page_width, self.options.page_height, self.options.font_size
        )
        self._drawn: OrderedDict[tuple[object, ...], _Drawn | None] = OrderedDict()
        self._archived = KnownArchived()
        self._recall = recall_tool()

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        if not self._applies(request, context):
            return LaneOutcome(request)
        messages = list(request.messages)
        drawn: list[_Drawn] = []
        for index, position in settled_results(request, context.kept, self.options.fresh_turns):
            message = messages[index]
            found = self._pages(message.role, message.parts[position], context.upstream_wire)
            if found is None:
                continue
            parts = list(message.parts)
            parts[position] = _replaced(parts[position], found)
            messages[index] = dataclasses.replace(message, parts=parts)
            drawn.append(found)
        if not drawn:
            return LaneOutcome(request)
        writes = [
            ArchiveWrite(d.ref, d.data, context.session, f"tool output of {d.call_id}")
            for d in drawn
            if self._archived.new(context.session, d.ref)
        ]
        saved = sum(d.saved for d in drawn)
        pages = sum(len(d.content) - 1 for d in drawn)
        report = {"outputs": len(drawn), "pages": pages, "tokens_saved": saved}
        changed = dataclasses.replace(request, messages=messages)
        return LaneOutcome(changed, writes, report, summary=f"-{saved}t")

    def _applies(self, request: Request, context: LaneContext) -> bool:
        """Whether this request may have pages: asked, allowlisted, ``recall`` offered."""
        if context.mode is Mode.OFF or context.extra.get(VISION_KEY) == "off" or not context.kept:
            return False
        if not any(fnmatch.fnmatchcase(request.model, p) for p in self.options.models):
            return False
        return any(tool == self._recall for tool in request.tools)

    def _pages(self, role: Role, part: Part, wire: Wire) -> _Drawn | None:
        """The pages of a dense text output, remembered by content; None for any other part
        and for an output that pages would not pay for (see the module)."""
        if not isinstance(part, ToolResult):
            return None
        text = text_of(part)
        if text is None or len(text) < self.options.min_chars or text.startswith(VIEW_MARK):
            return None
        key = (role, part.call_id, wire, len(text), hash(text))
        if key in self._drawn:
            self._drawn.move_to_end(key)
            return self._drawn[key]
        found = self._draw(role, part, text, wire)
        self._drawn[key] = found
        while len(self._drawn) > MEMO_SIZE:
            self._drawn.popitem(last=False)
        return found

    def _draw(self, role: Role, part: ToolResult, text: str, wire: Wire) -> _Drawn | None:
        require_pillow()
        shown = redact(text).text
        pages = lay_out(shown, self.layout)
        if len(pages) > self.options.max_pages:
            return None
        last = len(pages) - 1
        heights = [page_height(len(p), self.layout, last=i == last) for i, p in enumerate(pages)]
        pictured = sum(image_tokens(wire, self.layout.width, h) for h in heights)
        tokens = count_tokens(text)
        if tokens < self.options.min_ratio * pictured:
            return None
        data = canonical_span([Message(role, [part])])
        ref = ref_for(data)
        note = note_for(text, shown, ref, len(pages))
        saved = tokens - pictured - count_tokens(note)
        if saved <= 0:
            return None
        images = [_image(page, i == last, self.layout) for i, page in enumerate(pages)]
        return _Drawn((Text(note), *images), ref, data, saved, part.call_id)


def note_for(text: str, shown: str, ref: str, pages: int) -> str:
    """The line before the pages, and the identifiers of the (redacted) text, exactly::

        [skillstate pages of a text: 12,345 chars, 210 lines, shown as 2 page images below;
        the exact output is archived as REF: recall it with ref REF, or with a query for
        matching lines]
        identifiers kept exactly: src/app.py, 3f2a9c1, ...

    (the first line is one line; wrapped here only). Redacted as a whole."""
    lines = count_lines(text)
    header = (
        f"[skillstate pages of a text: {len(text):,} chars, {lines:,} line"
        f"{'' if lines == 1 else 's'}, shown as {pages} page image{'' if pages == 1 else 's'} "
        f"below; the exact output is archived as {ref}: recall it with ref {ref}, or with a "
        "query for matching lines]"
    )
    sidecar = identifiers.sidecar(identifiers.find(shown), "")
    said = [header, "identifiers kept exactly: " + ", ".join(sidecar)] if sidecar else [header]
    return redact("\n".join(said)).text


def rendered_lines(text: str, options: VisionOptions) -> list[list[str]]:
    """The lines the lane draws on each page of an output's ``text``: its redacted form laid
    out (what a test reads to know that no secret is pictured)."""
    layout = Layout(options.page_width, options.page_height, options.font_size)
    return lay_out(redact(text).text, layout)


def _image(lines: list[str], last: bool, layout: Layout) -> Image:
    page = draw(lines, layout, last=last)
    data = base64.b64encode(page.png).decode("ascii")
    return Image(data=data, media_type="image/png", detail="high", hints=dict(GATEWAY_IMAGE))


def _replaced(part: Part, drawn: _Drawn) -> Part:
    assert isinstance(part, ToolResult)
    return dataclasses.replace(part, content=list(drawn.content))


LANE = LaneSpec(
    name=VISION_KEY,
    build=lambda parts, options: VisionLane(options),
    idle_off=True,
    options=VisionOptions,
    header=LaneHeader("x-skillstate-vision", VISION_VALUES),
    check=require_pillow,
)
"""Off unless switched on: the benchmark's scripted model does not read images, so it cannot
show the lane paying (docs/lanes.md); switched on without Pillow, the gateway refuses to
start, naming the extra to install (``pages.MissingPillow``)."""
