"""The state lane's modes (DESIGN.md, "State modes")."""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    PAPER = "paper"
    """Every request is (P, Σ, O): the procedure, the state, the latest observation."""
    HYBRID = "hybrid"
    """The host's prompt, tools and recent turns verbatim; Σ stands in for older turns."""
    OFF = "off"
    """No state lane: the gateway forwards what the client sent."""


def parse_mode(value: str | None) -> Mode | None:
    """The mode ``value`` names (any case), or None when it names none."""
    if not value:
        return None
    return _BY_NAME.get(value.strip().lower())


_BY_NAME = {mode.value: mode for mode in Mode}
