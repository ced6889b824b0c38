"""The concise-output lane (``style``): one instruction asking for short answers, in the
stable part of the prompt.

The instruction is a ``Text`` added to the request's system prompt (where the wire's adapter
puts system text of the gateway's own), the same bytes on every request (so it joins the
prefix the provider caches from the session's second request on), and
says what is never shortened: security warnings, confirmations before irreversible actions,
and exact code, commands, paths, identifiers and error messages. ``x-skillstate-style: off``
leaves one request without it; ``concise`` asks for it where the lane is otherwise off
(through ``x-skillstate-lanes``, which chooses the lanes; the style header chooses the style).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from skillstate.conversation import Request, Text
from skillstate.pipeline.lane import LaneContext, LaneOutcome
from skillstate.pipeline.surface import LaneHeader, LaneSpec

INSTRUCTIONS = {
    "concise": (
        "Output style: be concise. Answer in as few words as the task allows, without "
        "preamble, restating the question, or summaries of what you just did. Never shorten "
        "security warnings, confirmations asked before irreversible actions, or exact code, "
        "commands, file paths, identifiers and error messages: give those in full."
    ),
}
"""Each style's instruction, by name (``off``: none)."""

STYLES = ("off", *INSTRUCTIONS)

STYLE_KEY = "style"
"""The lane's name, and so ``LaneContext.extra``'s key for the style a request asked for
(``x-skillstate-style``)."""


@dataclass(frozen=True, slots=True)
class StyleOptions:
    """The ``style`` lane's. ``style``: the output style asked for (``concise``, or ``off``)."""

    style: str = "concise"

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(f"style must be 'concise' or 'off', not {self.style!r}")


class StyleLane:
    name = STYLE_KEY

    def __init__(self, options: StyleOptions | None = None) -> None:
        self.options = options if options is not None else StyleOptions()

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        style = str(context.extra.get(STYLE_KEY, self.options.style))
        instruction = INSTRUCTIONS.get(style)
        if instruction is None:
            return LaneOutcome(request)
        system = [*request.system, Text(instruction)]
        return LaneOutcome(dataclasses.replace(request, system=system), summary=style)


LANE = LaneSpec(
    name=STYLE_KEY,
    build=lambda parts, options: StyleLane(options),
    options=StyleOptions,
    header=LaneHeader("x-skillstate-style", STYLES),
)
"""Off unless switched on: the benchmark's scripted model answers the same whatever it is
asked, so it cannot show the lane paying (docs/lanes.md)."""
