"""Σ's schema: the keys a session's state may hold, the shape of each, and the bounds.

A schema names Σ's top-level keys. Each key has a ``Shape``: a declared JSON type (with, for
objects, the shape of their members, and for strings, allowed values or a one-line rule), or no
type at all, in which case the type is *inferred*: a key takes the JSON type of the value Σ
holds for it (from the initial state, or from the first patch that set it); once the key is
deleted, the next accepted value sets its type again.

Collections that grow are objects keyed by short slugs (``{"plan": {"tests": {...}}}``), never
arrays, so a patch adds or changes one entry instead of resending the whole list.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

MAX_PATCH_BYTES = 16 * 1024
"""The largest patch accepted, in bytes of compact JSON: a patch adds a few entries, and a
bigger one is a model resending Σ (or pasting an observation into it)."""

MAX_STATE_BYTES = 64 * 1024
"""The largest Σ, in bytes of compact JSON. Σ travels on every upstream request, so its size
is the floor of every request's size (matches ``config.values.MAX_STATE_BYTES``)."""

MAX_DEPTH = 8
"""The deepest nesting of Σ and of a patch. Depth counts levels of values: Σ itself is at
depth 1 and each member or array item sits one level below its container, so
``{"plan": {"tests": {"step": "run"}}}`` has depth 4."""

MAX_KEY_LENGTH = 256
"""The longest object key anywhere in Σ, in characters. Keys are slugs, except in ``files``
where they are paths; 256 characters holds any sensible path."""

RESERVED_KEYS = frozenset({"__proto__", "constructor", "prototype"})
"""Keys refused at every level: the prototype-pollution names (Σ reaches JavaScript in the
dashboard and in agents that merge it into plain objects), wherever Σ keys are named, the
configured state schema included (``config.values``)."""


class JsonKind(StrEnum):
    """The JSON types (RFC 8259 values, with integers told apart from other numbers)."""

    STRING = "string"
    NUMBER = "number"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    ARRAY = "array"
    OBJECT = "object"


def kind_of(value: object) -> JsonKind | None:
    """The JSON type of ``value`` as ``jsonio.loads`` produces it, looking at the top only.

    ``None`` for what JSON cannot carry: ``null`` (Σ never holds it; in a patch it deletes),
    non-finite floats, and any Python type that is not ``str``, ``int``, ``float``, ``bool``,
    ``list`` or ``dict``. An integer is ``int`` only: ``3.0`` is a number, not an integer.
    """
    if isinstance(value, bool):
        return JsonKind.BOOLEAN
    if isinstance(value, int):
        return JsonKind.INTEGER
    if isinstance(value, float):
        return JsonKind.NUMBER if math.isfinite(value) else None
    if isinstance(value, str):
        return JsonKind.STRING
    if isinstance(value, list):
        return JsonKind.ARRAY
    if isinstance(value, dict):
        return JsonKind.OBJECT
    return None


def fits(declared: JsonKind, actual: JsonKind) -> bool:
    """Whether a value of type ``actual`` is a valid ``declared``: an integer is a number."""
    return actual is declared or (declared is JsonKind.NUMBER and actual is JsonKind.INTEGER)


class Rule(StrEnum):
    """How a patch's value for a key combines with the value Σ holds (``state.rules``)."""

    REPLACE = "replace"
    """JSON Merge Patch: a value replaces (an object's members each by their own rule), and
    ``null`` deletes."""
    APPEND = "append"
    """An array: the patch's items are added at its end."""
    UNION = "union"
    """An array: the patch's items it does not hold yet are added; an object (slug map): the
    patch's entries are added or updated; ``null`` deletes nothing."""
    SUM = "sum"
    """A number: the patch's number is added to it."""
    MAX = "max"
    """A number: the larger of the two is kept."""
    SET_ONCE = "set_once"
    """The first value is kept; a different one later is dropped."""


RULE_KINDS: dict[Rule, tuple[JsonKind, ...]] = {
    Rule.APPEND: (JsonKind.ARRAY,),
    Rule.UNION: (JsonKind.ARRAY, JsonKind.OBJECT),
    Rule.SUM: (JsonKind.NUMBER, JsonKind.INTEGER),
    Rule.MAX: (JsonKind.NUMBER, JsonKind.INTEGER),
}
"""The JSON types a rule combines (a rule not listed combines any)."""

RULE_WORDS: dict[Rule, str] = {
    Rule.APPEND: "append-only",
    Rule.UNION: "add or update, never delete",
    Rule.SUM: "a patch adds to it",
    Rule.MAX: "never lowered",
    Rule.SET_ONCE: "set once",
}
"""Each rule in words, as the model is told beside its key (``replace`` goes unsaid)."""


@dataclass(frozen=True, slots=True)
class Shape:
    """The shape of one value of Σ.

    ``kind`` is the declared JSON type, or ``None`` for a value whose type is inferred (at the
    top level) or free (below it). An object shape gives either ``fields`` (named members; a
    member not named is dropped from a patch) or ``entries`` (the shape of every member of an
    object keyed by slugs or paths), or neither (any members). An array shape may give the
    shape of its ``items``. A string shape may list its allowed ``choices`` or require
    ``one_line``. ``note`` says, for the model, what the value is for.
    """

    kind: JsonKind | None = None
    fields: Mapping[str, Shape] | None = None
    entries: Shape | None = None
    items: Shape | None = None
    choices: tuple[str, ...] = ()
    one_line: bool = False
    note: str = ""
    rule: Rule = Rule.REPLACE
    """How a patch combines with the value (``Rule``); its type must be one the rule
    combines (``RULE_KINDS``)."""

    def __post_init__(self) -> None:
        kinds = RULE_KINDS.get(self.rule)
        if kinds is not None and self.kind is not None and self.kind not in kinds:
            raise SchemaError(f"the {self.rule} rule does not combine {self.kind} values")

    def describe(self) -> str:
        """A short text of this shape for the model, e.g. ``object slug -> string``."""
        if self.kind is None:
            return "any JSON value"
        if self.choices:
            return "|".join(self.choices)
        if self.fields is not None:
            inner = ", ".join(f"{name}: {sub.describe()}" for name, sub in self.fields.items())
            return "{" + inner + "}"
        if self.entries is not None:
            return f"object slug -> {self.entries.describe()}"
        if self.items is not None:
            return f"array of {self.items.describe()}"
        return "one-line string" if self.one_line else str(self.kind)


@dataclass(frozen=True, slots=True)
class Bounds:
    """The size limits a patch and the Σ it produces must respect (see the module constants)."""

    max_patch_bytes: int = MAX_PATCH_BYTES
    max_state_bytes: int = MAX_STATE_BYTES
    max_depth: int = MAX_DEPTH
    max_key_length: int = MAX_KEY_LENGTH

    def __post_init__(self) -> None:
        for name in ("max_patch_bytes", "max_state_bytes", "max_depth", "max_key_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")


class SchemaError(ValueError):
    """A schema, or an initial state, that cannot be used."""


@dataclass(frozen=True, slots=True)
class StateSchema:
    """Σ's allowed top-level keys, in order, each with its shape, and the bounds."""

    keys: Mapping[str, Shape]
    bounds: Bounds = field(default_factory=Bounds)

    def __post_init__(self) -> None:
        if not self.keys:
            raise SchemaError("a schema names at least one key")
        for key in self.keys:
            if not key or len(key) > self.bounds.max_key_length:
                raise SchemaError(f"key {key!r} is empty or longer than the key limit")
            if key in RESERVED_KEYS:
                raise SchemaError(f"key {key!r} is a reserved name")

    def shape(self, key: str) -> Shape | None:
        """The shape of ``key``, or ``None`` when the schema does not allow it."""
        return self.keys.get(key)

    def describe(self) -> str:
        """One line per key, ``- key: shape — note``, as the model is told in P and tools."""
        lines = []
        for key, shape in self.keys.items():
            text = "inferred from its first value" if shape.kind is None else shape.describe()
            said = "; ".join(w for w in (shape.note, RULE_WORDS.get(shape.rule, "")) if w)
            lines.append(f"- {key}: {text}" + (f" — {said}" if said else ""))
        return "\n".join(lines)

    @classmethod
    def from_keys(cls, keys: Sequence[str] | None, *, bounds: Bounds | None = None) -> StateSchema:
        """The schema of ``settings.state_schema``: the default agent schema when ``keys`` is
        ``None``; otherwise those keys in order, where a key the default agent schema declares
        (``step``, ``plan``, ``findings``...) keeps its declared shape and any other key's type
        is inferred. A key may name its rule after a colon (``count:sum``, ``findings:replace``:
        ``Rule``); an inferred key whose rule combines one type only takes that type."""
        declared = default_agent_shapes()
        if keys is None:
            return cls(declared, bounds or Bounds())
        named = [split_rule(key) for key in keys]
        if len({key for key, _ in named}) != len(named):
            raise SchemaError("a schema names each key once")
        shapes = {key: _ruled(declared.get(key, Shape()), rule) for key, rule in named}
        return cls(shapes, bounds or Bounds())


def split_rule(key: str) -> tuple[str, Rule | None]:
    """A schema entry's key and the rule it names after a colon (None: none named);
    ``SchemaError`` for a rule that is not one."""
    name, colon, rule = key.partition(":")
    if not colon:
        return key, None
    try:
        return name, Rule(rule.strip())
    except ValueError:
        known = ", ".join(Rule)
        raise SchemaError(f"key {name!r}: {rule!r} is not a rule ({known})") from None


def _ruled(shape: Shape, rule: Rule | None) -> Shape:
    if rule is None:
        return shape
    kinds = RULE_KINDS.get(rule, ())
    kind = shape.kind
    if kind is None and kinds and JsonKind.OBJECT not in kinds:
        kind = kinds[0]  # sum, max: a number; append: an array (union: either, inferred)
    return replace(shape, kind=kind, rule=rule)


def _string(note: str = "", *, one_line: bool = False) -> Shape:
    return Shape(JsonKind.STRING, one_line=one_line, note=note)


def _slug_map(entry: Shape, note: str) -> Shape:
    return Shape(JsonKind.OBJECT, entries=entry, note=note)


PLAN_STATUSES = ("done", "active", "todo", "blocked")
"""The status of a plan step: finished, being worked on, not started, waiting on something."""


def default_agent_shapes() -> dict[str, Shape]:
    """The default agent schema: what a coding agent needs to resume a task from Σ alone.
    What was learned is never deleted by a patch (``findings``: ``union``; the failure the
    paper's error analysis finds most, a fact overwritten or deleted too soon), and the step
    never goes back (``max``); the rest is replaced, so the model can keep it current."""
    plan_step = Shape(
        JsonKind.OBJECT,
        fields={
            "step": _string("what the step does"),
            "status": Shape(JsonKind.STRING, choices=PLAN_STATUSES),
        },
    )
    working = Shape(
        JsonKind.OBJECT,
        fields={
            "cwd": _string(),
            "branch": _string(),
            "active_files": Shape(JsonKind.ARRAY, items=_string()),
        },
        note="where the work happens now",
    )
    return {
        "objective": _string("the task, in one line", one_line=True),
        "plan": _slug_map(plan_step, "the steps, keyed by short slugs"),
        "done": _slug_map(_string(), "what is finished"),
        "findings": replace(_slug_map(_string(), "facts learned"), rule=Rule.UNION),
        "files": _slug_map(_string(), "path -> what we know or did there"),
        "decisions": _slug_map(_string(), "choices made and why"),
        "errors_tried": _slug_map(_string(), "errors met and what was tried"),
        "working": working,
        "open": _slug_map(_string(), "open questions"),
        "step": Shape(JsonKind.INTEGER, note="the number of the current step", rule=Rule.MAX),
    }
