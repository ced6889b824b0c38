"""Which lanes run, and with what options: the ``[lanes.NAME]`` tables of the config, each with
``enabled`` and the options its lane declares.

    [lanes.state]
    enabled = false      # no Σ, no internal tools: requests pass as the client sent them

    [lanes.schemas]
    description_chars = 2000

Host compaction, the state lane and output compaction are on unless their table says
``enabled = false``; the lanes the benchmark cannot show paying (``schemas``, ``style``,
``effort``, ``vision``) are off unless it says ``enabled = true`` (``DEFAULT_OFF``;
docs/lanes.md has the measurements behind each). An unknown lane or option, or an option of
the wrong type, is an error naming it. ``--lanes a,b`` (or ``SKILLSTATE_LANES=a,b``) chooses
the set instead: exactly those lanes on, every other off, the options of the tables kept
(``with_only``). A request can choose its own set with ``x-skillstate-lanes: a,b``, from
every lane the gateway built, switched off or not.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from skillstate.pipeline.options import (
    OutputsOptions,
    SchemasOptions,
    StyleOptions,
    VisionOptions,
)

LANES = ("compaction", "schemas", "style", "effort", "state", "vision", "outputs")
"""Every lane's name, in the order the request path runs them."""

OPTIONS: dict[str, type[Any]] = {
    "schemas": SchemasOptions,
    "style": StyleOptions,
    "outputs": OutputsOptions,
    "vision": VisionOptions,
}
"""Each lane's options (``pipeline.options``): the table's keys besides ``enabled``; a lane
absent here takes none."""


DEFAULT_OFF = frozenset({"schemas", "style", "effort", "vision"})
"""The lanes off unless switched on (docs/lanes.md has the figures behind each)."""


@dataclass(frozen=True, slots=True)
class LaneSwitches:
    off: frozenset[str] = DEFAULT_OFF
    options: Mapping[str, Any] = field(default_factory=dict)
    """The options each lane's table gave, as that lane's options class."""

    def enabled(self, name: str) -> bool:
        return name not in self.off

    def on(self) -> frozenset[str]:
        return frozenset(name for name in LANES if self.enabled(name))

    def options_for(self, name: str) -> Any:
        """``name``'s options: its table's, or the declared defaults."""
        given = self.options.get(name)
        return given if given is not None else OPTIONS[name]()

    def as_json(self) -> dict[str, dict[str, object]]:
        tables: dict[str, dict[str, object]] = {}
        for name in LANES:
            table: dict[str, object] = {"enabled": self.enabled(name)}
            if name in OPTIONS:
                given = dataclasses.asdict(self.options_for(name))
                table.update({k: _plain(v) for k, v in given.items()})
            tables[name] = table
        return tables

    def rows(self) -> list[tuple[str, str]]:
        """``("lanes.schemas", "on (description_chars=2000)")`` for each lane: its switch, and
        the options its table gave."""
        rows = []
        for name in LANES:
            text = "on" if self.enabled(name) else "off"
            given = self.options.get(name)
            if given is not None:
                pairs = ", ".join(
                    f"{k}={','.join(v) if isinstance(v, tuple) else v}"
                    for k, v in dataclasses.asdict(given).items()
                )
                text += f" ({pairs})"
            rows.append((f"lanes.{name}", text))
        return rows

    def __str__(self) -> str:
        """``compaction=on, schemas=on (description_chars=2000), state=off``."""
        return ", ".join(f"{key.removeprefix('lanes.')}={text}" for key, text in self.rows())


def _plain(value: object) -> object:
    """An option as JSON has it (a tuple as a list)."""
    return list(value) if isinstance(value, tuple) else value


def parse_switches(tables: Mapping[str, object]) -> LaneSwitches:
    """``LaneSwitches`` from ``{lane: {"enabled": bool, option: value, ...}}``; raises
    ``ValueError`` listing every unknown lane, unknown option and value of the wrong type."""
    problems: list[str] = []
    off: set[str] = set(DEFAULT_OFF)
    options: dict[str, Any] = {}
    for name, table in tables.items():
        if name not in LANES:
            problems.append(_unknown(name))
            continue
        if not isinstance(table, Mapping):
            problems.append(f"lanes.{name} must be a table, e.g. {{enabled = false}}")
            continue
        enabled = table.get("enabled", name not in DEFAULT_OFF)
        if not isinstance(enabled, bool):
            problems.append(f"lanes.{name}.enabled must be true or false, not {enabled!r}")
        elif enabled:
            off.discard(name)
        else:
            off.add(name)
        given = {key: value for key, value in table.items() if key != "enabled"}
        parsed = _options(name, given, problems)
        if parsed is not None:
            options[name] = parsed
    if problems:
        raise ValueError("; ".join(problems))
    return LaneSwitches(frozenset(off), options)


def _options(name: str, given: Mapping[str, object], problems: list[str]) -> Any:
    """``given`` as ``name``'s options class (None when it gave none or any was wrong)."""
    declared = OPTIONS.get(name)
    fields = {f.name: f for f in dataclasses.fields(declared)} if declared else {}
    before = len(problems)
    for key, value in given.items():
        if key not in fields:
            known = ", ".join(["enabled", *fields])
            problems.append(f"lanes.{name} has no option {key!r} (options: {known})")
        elif not _fits(value, fields[key].type):
            kind = _TYPE_WORDS.get(str(fields[key].type), str(fields[key].type))
            problems.append(f"lanes.{name}.{key} must be {kind}, not {value!r}")
    if len(problems) > before or not given or declared is None:
        return None
    try:  # a TOML or JSON list is the option's tuple
        return declared(**{k: tuple(v) if isinstance(v, list) else v for k, v in given.items()})
    except ValueError as exc:  # the options' own bounds (``__post_init__``)
        problems.append(f"lanes.{name}: {exc}")
        return None


_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "str": "text",
    "tuple[str, ...]": "a list of strings",
}


def _fits(value: object, annotation: object) -> bool:
    """Whether ``value`` (from TOML or JSON) is of the option's declared type, named as text
    under ``from __future__ import annotations``; a bool is not a number here."""
    kind = str(annotation)
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == "int":
        return isinstance(value, int)
    if kind == "float":
        return isinstance(value, int | float)
    if kind == "str":
        return isinstance(value, str)
    if kind == "tuple[str, ...]":
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    return True


def _unknown(name: str) -> str:
    close = difflib.get_close_matches(name, LANES, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"lane {name!r} is unknown (lanes: {', '.join(LANES)}){hint}"


def parse_names(text: str) -> frozenset[str]:
    """The lanes ``a,b`` names (spaces around names ignored; ``none``: no lane); raises
    ``ValueError`` naming each unknown one."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if names == ["none"]:
        return frozenset()
    unknown = [_unknown(name) for name in names if name not in LANES]
    if unknown:
        raise ValueError("; ".join(unknown))
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class LaneChoice:
    """``--lanes a,b`` as read: the set chosen, to be laid over the tables (``with_only``)."""

    names: frozenset[str]


def parse_choice(text: str) -> object:
    """``SKILLSTATE_LANES`` / ``--lanes`` text: JSON tables (``{"state": {...}}``), or lane
    names, comma separated (a ``LaneChoice``)."""
    if text.lstrip().startswith("{"):
        return None
    return LaneChoice(parse_names(text))


def with_only(tables: Mapping[str, object], names: frozenset[str]) -> dict[str, object]:
    """``tables`` with exactly ``names`` enabled, every other lane disabled, and the options
    the tables gave kept."""
    chosen: dict[str, object] = {}
    for name in LANES:
        table = tables.get(name)
        kept = dict(table) if isinstance(table, Mapping) else {}
        chosen[name] = {**kept, "enabled": name in names}
    return chosen
