"""The options each lane takes from its ``[lanes.NAME]`` table besides ``enabled``: one frozen
dataclass per lane, every field with its default, bounds checked in ``__post_init__``
(``ValueError`` naming the option). Kept apart from the lanes so that reading the config does
not import what the lanes run on."""

from __future__ import annotations

from dataclasses import dataclass

MIN_DESCRIPTION_CHARS = 200
"""A shorter bound would cut most descriptions to their first sentence."""


@dataclass(frozen=True, slots=True)
class SchemasOptions:
    """``description_chars``: a tool's or a parameter's description longer than this is cut
    there, the cut marked in the text (0: never cut; the rest of the compaction loses
    nothing, the cut does, so it is asked for)."""

    description_chars: int = 0

    def __post_init__(self) -> None:
        if self.description_chars and self.description_chars < MIN_DESCRIPTION_CHARS:
            raise ValueError(
                f"description_chars must be 0 (never cut) or at least {MIN_DESCRIPTION_CHARS}, "
                f"not {self.description_chars}"
            )
