"""Which lanes run, and with what options: the ``[lanes.NAME]`` tables of the config, each with
``enabled`` and the options its lane declares.

    [lanes.state]
    enabled = false      # no Σ, no internal tools: requests pass as the client sent them

    [lanes.schemas]
    description_chars = 2000

Every lane, its options and its default switch are declared by the lane itself
(``surface.LaneSpec``) and ordered in one list (``pipeline.lineup``); this module reads the
tables against them. Host compaction, the state lane and output compaction are on unless their
table says ``enabled = false``; the lanes the benchmark cannot show paying (``schemas``,
``style``, ``effort``, ``vision``) are off unless it says ``enabled = true`` (docs/lanes.md has
the measurements behind each). An unknown lane or option, or an option of
the wrong type, is an error naming it. ``--lanes a,b`` (or ``SKILLSTATE_LANES=a,b``) chooses
the set instead: exactly those lanes on, every other off, the options of the tables kept
(``with_only``). A request can choose its own set with ``x-skillstate-lanes: a,b``, from
every lane the gateway built, switched off or not.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillstate.pipeline.surface import LaneSpec


def lineup() -> list[LaneSpec]:
    """Every lane, in order (``pipeline.lineup.LANES``), imported on first use: that module
    imports every lane and what it runs on, which reading a config that names no lane (as
    ``skillstate hook`` and ``shell`` do on every shell call of an agent) does not need."""
    from skillstate.pipeline.lineup import LANES

    return LANES


def names() -> list[str]:
    """Every lane's name, in order."""
    return [spec.name for spec in lineup()]


def spec_of(name: str) -> LaneSpec:
    """The lane ``name``'s declaration; ``KeyError`` for a lane there is not."""
    for spec in lineup():
        if spec.name == name:
            return spec
    raise KeyError(name)


@dataclass(frozen=True, slots=True)
class LaneSwitches:
    """The ``[lanes.NAME]`` tables as read: what they said of ``enabled`` and the options they
    gave; a lane they did not name is as it declares (``LaneSpec.on``, its options' defaults).
    """

    switched: Mapping[str, bool] = field(default_factory=dict)
    """``enabled`` as each table that said it said it."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """The options each lane's table gave, as that lane's options class."""

    def enabled(self, name: str) -> bool:
        said = self.switched.get(name)
        return spec_of(name).on if said is None else said

    @property
    def off(self) -> frozenset[str]:
        """The lanes that do not run unless a request asks for them."""
        return frozenset(name for name in names() if not self.enabled(name))

    def on(self) -> frozenset[str]:
        return frozenset(name for name in names() if self.enabled(name))

    def options_for(self, name: str) -> Any:
        """``name``'s options: its table's, or the declared defaults (None: it takes none)."""
        given = self.options.get(name)
        return given if given is not None else spec_of(name).default_options()

    def as_json(self) -> dict[str, dict[str, object]]:
        tables: dict[str, dict[str, object]] = {}
        for name in names():
            table: dict[str, object] = {"enabled": self.enabled(name)}
            options = self.options_for(name)
            if options is not None:
                given = dataclasses.asdict(options)
                table.update({k: _plain(v) for k, v in given.items()})
            tables[name] = table
        return tables

    def rows(self) -> list[tuple[str, str]]:
        """``("lanes.schemas", "on (description_chars=2000)")`` for each lane: its switch, and
        the options its table gave."""
        rows = []
        for name in names():
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
    switched: dict[str, bool] = {}
    options: dict[str, Any] = {}
    known = {spec.name: spec for spec in lineup()}
    for name, table in tables.items():
        spec = known.get(name)
        if spec is None:
            problems.append(_unknown(name))
            continue
        if not isinstance(table, Mapping):
            problems.append(f"lanes.{name} must be a table, e.g. {{enabled = false}}")
            continue
        enabled = table.get("enabled", spec.on)
        if not isinstance(enabled, bool):
            problems.append(f"lanes.{name}.enabled must be true or false, not {enabled!r}")
        elif "enabled" in table:
            switched[name] = enabled
        given = {key: value for key, value in table.items() if key != "enabled"}
        parsed = _options(spec, given, problems)
        if parsed is not None:
            options[name] = parsed
    if problems:
        raise ValueError("; ".join(problems))
    return LaneSwitches(switched, options)


def _options(spec: LaneSpec, given: Mapping[str, object], problems: list[str]) -> Any:
    """``given`` as the lane's options class (None when it gave none or any was wrong)."""
    name, declared = spec.name, spec.options
    fields = {f.name: f for f in dataclasses.fields(declared)} if declared else {}
    before = len(problems)
    for key, value in given.items():
        if key not in fields:
            known = ", ".join(["enabled", *fields])
            problems.append(f"lanes.{name} has no option {key!r} (options: {known})")
        elif not _fits(value, _kind(fields[key].type)):
            kind = _kind(fields[key].type)
            problems.append(
                f"lanes.{name}.{key} must be {_TYPE_WORDS.get(kind, kind)}, not {value!r}"
            )
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

_TYPE_NAMES: dict[object, str] = {
    int: "int",
    float: "float",
    bool: "bool",
    str: "str",
    tuple[str, ...]: "tuple[str, ...]",
}


def _kind(annotation: object) -> str:
    """An option's declared type as text: as written under ``from __future__ import
    annotations`` (how the lanes declare theirs), or named for the type itself."""
    if isinstance(annotation, str):
        return annotation
    return _TYPE_NAMES.get(annotation, repr(annotation))


def _fits(value: object, kind: str) -> bool:
    """Whether ``value`` (from TOML or JSON) is of the option's declared type; a bool is not a
    number here."""
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


def _unknown(name: str, known: Sequence[str] | None = None) -> str:
    lanes = names() if known is None else known
    close = difflib.get_close_matches(name, lanes, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"lane {name!r} is unknown (lanes: {', '.join(lanes)}){hint}"


def parse_names(text: str, known: Sequence[str] | None = None) -> frozenset[str]:
    """The lanes ``a,b`` names (spaces around names ignored; ``none``: no lane), out of
    ``known`` (default: every lane); raises ``ValueError`` naming each unknown one."""
    lanes = names() if known is None else known
    given = [name.strip() for name in text.split(",") if name.strip()]
    if given == ["none"]:
        return frozenset()
    unknown = [_unknown(name, lanes) for name in given if name not in lanes]
    if unknown:
        raise ValueError("; ".join(unknown))
    return frozenset(given)


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


def with_only(tables: Mapping[str, object], chosen: frozenset[str]) -> dict[str, object]:
    """``tables`` with exactly ``chosen`` enabled, every other lane disabled, and the options
    the tables gave kept."""
    laid: dict[str, object] = {}
    for name in names():
        table = tables.get(name)
        kept = dict(table) if isinstance(table, Mapping) else {}
        laid[name] = {**kept, "enabled": name in chosen}
    return laid
