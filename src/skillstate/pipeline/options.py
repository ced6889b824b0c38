"""The options each lane takes from its ``[lanes.NAME]`` table besides ``enabled``: one frozen
dataclass per lane, every field with its default, bounds checked in ``__post_init__``
(``ValueError`` naming the option). Kept apart from the lanes so that reading the config does
not import what the lanes run on."""

from __future__ import annotations

from dataclasses import dataclass

MIN_DESCRIPTION_CHARS = 64
"""The smallest cut bound: below it the cut's own marker would be most of what is left."""

VIEW_KINDS = ("log", "json", "diff", "text")
"""The kinds of view the outputs lane makes (``skillstate.outputs.views``)."""

MIN_BOUNDARY_CHARS = 2_000
"""The shortest output a boundary makes a view of: a view of less says almost nothing."""


@dataclass(frozen=True, slots=True)
class SchemasOptions:
    """The ``schemas`` lane's. ``description_chars``: cut a tool's or a schema's description
    longer than this many characters, marking the cut in the text (``… [cut 1,234 chars]``);
    0, the default, never cuts. The cut is the one lossy step and so is opt-in; everything
    else the lane does is lossless and always on."""

    description_chars: int = 0

    def __post_init__(self) -> None:
        chars = self.description_chars
        if chars != 0 and chars < MIN_DESCRIPTION_CHARS:
            raise ValueError(
                f"description_chars must be 0 (never cut) or at least {MIN_DESCRIPTION_CHARS}"
                f", not {chars}"
            )


@dataclass(frozen=True, slots=True)
class OutputsOptions:
    """The ``outputs`` lane's. ``min_chars``: a tool output at least this long is replaced by
    its view when it arrives; ``budget_chars``: about how long a view is.
    ``boundary_min_chars``: at an epoch boundary, an output at least this long in the turns
    the boundary kept is replaced by its view too (about a quarter of its length), except in
    the newest ``fresh_turns`` turns (an output of ``min_chars`` or more is a view anyway)."""

    min_chars: int = 16_000
    budget_chars: int = 6_000
    boundary_min_chars: int = 4_000
    fresh_turns: int = 2
    arrival: tuple[str, ...] = ("log", "json")

    def __post_init__(self) -> None:
        if self.budget_chars < 1_000:
            raise ValueError(f"budget_chars must be at least 1000, not {self.budget_chars}")
        if self.min_chars < 2 * self.budget_chars:
            raise ValueError(
                f"min_chars must be at least twice budget_chars ({2 * self.budget_chars}), "
                f"not {self.min_chars}: a view would save too little"
            )
        if self.boundary_min_chars < MIN_BOUNDARY_CHARS:
            raise ValueError(
                f"boundary_min_chars must be at least {MIN_BOUNDARY_CHARS}, "
                f"not {self.boundary_min_chars}"
            )
        unknown = sorted(set(self.arrival) - set(VIEW_KINDS))
        if unknown:
            raise ValueError(
                f"arrival: {', '.join(unknown)} is not a view kind ({', '.join(VIEW_KINDS)})"
            )
        if self.fresh_turns < 1:
            raise ValueError(f"fresh_turns must be at least 1, not {self.fresh_turns}")


@dataclass(frozen=True, slots=True)
class StyleOptions:
    """The ``style`` lane's. ``style``: the output style asked for (``concise``, or ``off``)."""

    style: str = "concise"

    def __post_init__(self) -> None:
        if self.style not in ("off", "concise"):
            raise ValueError(f"style must be 'concise' or 'off', not {self.style!r}")


VISION_MODELS = ("gpt-4o*", "gpt-4.1*", "gpt-5*", "claude-*")
"""The models the ``vision`` lane draws pages for unless its table names others: those that
read text in images well (fnmatch patterns over the request's model)."""


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
