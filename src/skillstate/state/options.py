"""The options of the collapse lane, and reading them from a mapping.

``config.py`` composes these with the other lanes' options; it hands the collapse section over
as a plain mapping and ``parse_options`` turns it into ``CollapseOptions``. Every problem in the
mapping is reported at once, each naming its option: an unknown name (with the closest known
one), a value of the wrong type (``True`` is not a number here, and ``3.0`` is not a whole
number), a number out of range.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class CollapseOptions:
    """How the state engine bounds a session's context by collapsing old turns into Σ.

    * ``enabled`` (True): collapse at all. Off, the request keeps its whole history.
    * ``min_turns`` (12): a conversation of fewer turns is never collapsed; short sessions gain
      little and every boundary costs one cache miss.
    * ``keep_recent_turns`` (4): turns kept verbatim after a boundary (at least 1), so the model
      always sees its latest steps exactly. A tool call and its results are one turn.
    * ``protect_first_user_message`` (True): the session's first user instruction stays
      verbatim at the head of every request (DESIGN.md, invariant 3).
    * ``allow_subagent_sessions`` (False): subagent sessions (a host's helper agents) are short
      and owned by their parent; they are left alone unless this is set.
    * ``seed_from_tools`` (True): the deterministic seed fills holes in Σ from the tool calls in
      the recent window (files read and edited, commands and exit codes, errors).
    * ``track_tools`` (True): the index of a collapsed span records each turn's tool calls (name
      and target), so the Σ message can say what ran in the span it replaced.
    * ``nudge_when_stale`` (True): the tail note reminds the model to update Σ when it has not
      patched it for ``stale_after`` steps.
    * ``stale_after`` (6): steps without a patch before that reminder (at least 1).
    * ``max_window_tokens`` (160,000): a verbatim window this large starts a boundary whatever
      the cost rule says, so that a session can outgrow the model's context window (the cost
      rule alone could wait past it when a few huge tool outputs sit in the kept turns). Set
      it below the model's window; forced boundaries below what the cost rule would choose
      cost money (at 64,000 a 20-turn coding loop paid 8% more than pass-through).
    * ``every_request`` (False): every request is a boundary candidate, whatever the cost rule
      says (the cut still needs ``min_turns`` and moves only when a turn left the kept tail).
      This is cache-blind rewriting, kept for the benchmark's ``hybrid-no-epochs`` arm: it
      shows what rewriting the history on every turn costs against epochs. Never a default.
    * ``passthrough_until_boundary`` (True): until its first boundary a session is passed
      through as it came (no internal tools, no Σ message or note; the seed keeps Σ in the
      store), so a short session costs what pass-through costs. The internal tools and Σ
      arrive with the first boundary, whose cost rule prices their cache miss in. Off, the
      tools and the Σ note are offered from the session's first request.
    * ``handover`` (True): that first boundary starts with a hidden round in which the model
      writes Σ from the whole history it still sees, at the cached price
      (``state.handover``). Off, Σ holds only what the seed found when the history collapses.
    """

    enabled: bool = True
    min_turns: int = 12
    keep_recent_turns: int = 4
    protect_first_user_message: bool = True
    allow_subagent_sessions: bool = False
    seed_from_tools: bool = True
    track_tools: bool = True
    nudge_when_stale: bool = True
    stale_after: int = 6
    max_window_tokens: int = 160_000
    every_request: bool = False
    passthrough_until_boundary: bool = True
    handover: bool = True


class OptionsError(ValueError):
    """The collapse options could not be read; ``problems`` holds one line per bad option."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__("\n".join(self.problems))


#: The smallest value each whole-number option accepts.
_MINIMUM = {"min_turns": 0, "keep_recent_turns": 1, "stale_after": 1, "max_window_tokens": 1000}


def _kinds() -> dict[str, type]:
    """Each option's type, from the dataclass itself so the two cannot drift apart."""
    defaults = CollapseOptions()
    return {f.name: type(getattr(defaults, f.name)) for f in fields(CollapseOptions)}


def parse_options(mapping: Mapping[str, object]) -> CollapseOptions:
    """``CollapseOptions`` from ``mapping``; options left out keep their defaults.

    Raises ``OptionsError`` listing every unknown option, wrong type and out-of-range value.
    """
    kinds = _kinds()
    problems: list[str] = []
    values: dict[str, Any] = {}  # each value checked against its option's type below
    for name, value in mapping.items():
        kind = kinds.get(name)
        problem = _unknown(name, kinds) if kind is None else _check(name, value, kind)
        if problem:
            problems.append(problem)
        else:
            values[name] = value
    if problems:
        raise OptionsError(problems)
    return CollapseOptions(**values)


def _unknown(name: str, kinds: Mapping[str, type]) -> str:
    close = difflib.get_close_matches(name, list(kinds), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"collapse option {name!r} is unknown{hint}"


def _check(name: str, value: object, kind: type) -> str | None:
    # bool is a subclass of int: ``keep_recent_turns = true`` must not read as 1.
    if kind is bool and not isinstance(value, bool):
        return f"collapse option {name!r} must be true or false, not {_shown(value)}"
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"collapse option {name!r} must be a whole number, not {_shown(value)}"
        least = _MINIMUM[name]
        if value < least:
            return f"collapse option {name!r} must be at least {least}, not {value}"
    return None


def _shown(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"
