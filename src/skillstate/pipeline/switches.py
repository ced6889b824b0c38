"""Which lanes run: the ``[lanes.NAME]`` tables of the config, each with ``enabled``.

    [lanes.state]
    enabled = false      # no Σ, no internal tools: requests pass as the client sent them

Every lane is on unless its table says ``enabled = false``. An unknown lane or option is an
error naming it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

LANES = ("compaction", "state")
"""Every lane's name, in the order the request path runs them."""


@dataclass(frozen=True, slots=True)
class LaneSwitches:
    off: frozenset[str] = frozenset()

    def enabled(self, name: str) -> bool:
        return name not in self.off

    def as_json(self) -> dict[str, dict[str, bool]]:
        return {name: {"enabled": self.enabled(name)} for name in LANES}

    def __str__(self) -> str:
        return ", ".join(f"{name}={'on' if self.enabled(name) else 'off'}" for name in LANES)


def parse_switches(tables: Mapping[str, object]) -> LaneSwitches:
    """``LaneSwitches`` from ``{lane: {"enabled": bool}}``; raises ``ValueError`` listing every
    unknown lane, unknown option and non-boolean ``enabled``."""
    problems: list[str] = []
    off: set[str] = set()
    for name, table in tables.items():
        if name not in LANES:
            close = difflib.get_close_matches(name, LANES, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.append(f"lane {name!r} is unknown (lanes: {', '.join(LANES)}){hint}")
            continue
        if not isinstance(table, Mapping):
            problems.append(f"lanes.{name} must be a table, e.g. {{enabled = false}}")
            continue
        for option, value in table.items():
            if option != "enabled":
                problems.append(f"lanes.{name} has no option {option!r} (only 'enabled')")
            elif not isinstance(value, bool):
                problems.append(f"lanes.{name}.enabled must be true or false, not {value!r}")
            elif not value:
                off.add(name)
    if problems:
        raise ValueError("; ".join(problems))
    return LaneSwitches(frozenset(off))
