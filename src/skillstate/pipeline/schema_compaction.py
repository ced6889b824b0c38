"""The pure schema walk of the ``schemas`` lane: one JSON Schema in, a smaller one out.

Contract (``compact_schema``):

* Removed, wherever it is a schema keyword (at the root and in every subschema): ``$schema``,
  ``$id``, ``$comment``, ``title``, ``examples``, ``example``, ``deprecated``, ``readOnly``,
  ``writeOnly``, ``markdownDescription``, and the ``default``s that say nothing: a ``default`` of
  null, and one on a property its object lists in ``required`` (a required property is never
  omitted, so its default is never used). Other defaults stay: they tell the model what
  leaving the property out means.
* ``description``s keep their words: whitespace is collapsed (``collapse``) and, only when
  asked, an over-long one is cut with the cut marked in the text (``cut``).
* Nothing else ever changes: property names, ``type``, ``required``, ``enum``, ``const``,
  ``pattern``, ``format``, every other keyword, and the order of keys.

Only schema positions are walked: ``properties``, ``patternProperties``, ``$defs``,
``definitions`` and ``dependentSchemas`` hold named subschemas (the names are data: a property
called ``title`` stays); ``items``, ``additionalProperties``, ``not``, ``if``/``then``/``else``,
``anyOf``/``oneOf``/``allOf`` and the rest in ``_ONE`` and ``_MANY`` hold subschemas. The values
of every other keyword (``enum``, ``const``, ``required``, ``default``) are data, never walked.

Two guards keep references working: a ``$ref`` that is not a local pointer (``#...``) may be
resolved against an ``$id``, so a schema holding one keeps its ``$id``s; and a schema whose
``$ref`` points through a keyword this walk removes is returned as it was.

The walk is deterministic: the output depends on the input's content and key order only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from skillstate.conversation.model import Json

METADATA = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "title",
        "examples",
        "example",
        "deprecated",
        "readOnly",
        "writeOnly",
        "markdownDescription",
    }
)
"""The keywords removed at every schema position (``default`` has its own rule)."""

# Keywords whose value is a map of name -> subschema.
_NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
# Keywords whose value is one subschema (or, for draft-04..07 ``items``, a list of them).
_ONE = frozenset(
    {
        "items",
        "additionalItems",
        "unevaluatedItems",
        "additionalProperties",
        "unevaluatedProperties",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    }
)
# Keywords whose value is a list of subschemas.
_MANY = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})

_RUNS = re.compile(r" {2,}")
_BLANKS = re.compile(r"\n{3,}")
_INDENT = re.compile(r"[ \t]*")


def compact_schema(schema: Json, description_chars: int = 0) -> Json:
    """``schema`` without its non-operational metadata (the module's contract); a new object,
    ``schema`` is not changed. ``description_chars``: cut descriptions longer than this
    (0: never)."""
    refs = list(_refs(schema))
    if any(_points_through_removed(ref) for ref in refs):
        return schema
    removed = METADATA
    if any(not ref.startswith("#") for ref in refs):
        removed = METADATA - {"$id"}
    walk = _Walk(removed, description_chars)
    return walk.object(schema, required=False)


def compact_description(text: str, description_chars: int = 0) -> str:
    """A description as the walk leaves it: collapsed, then cut when it is over the bound."""
    return cut(collapse(text), description_chars)


def collapse(text: str) -> str:
    """Whitespace the model does not read: spaces at line ends, runs of spaces within a line
    (a line's leading indentation stays: it nests lists and code), three or more newlines
    (two stay: a paragraph break), and whitespace around the whole text. Single newlines stay,
    they carry lists."""
    lines = []
    for line in text.split("\n"):
        line = line.rstrip()
        indent = _INDENT.match(line)
        start = indent.end() if indent else 0
        lines.append(line[:start] + _RUNS.sub(" ", line[start:]))
    return _BLANKS.sub("\n\n", "\n".join(lines).strip())


def cut(text: str, bound: int) -> str:
    """``text`` cut to at most ``bound`` characters, the marker included (``… [cut 1,234
    chars]``), so a cut text is never cut again; ``bound`` 0: never cut."""
    if bound <= 0 or len(text) <= bound:
        return text
    # The marker for the whole length is the longest one this text can need.
    head = text[: max(bound - len(_marker(len(text))), 0)].rstrip()
    return head + _marker(len(text) - len(head))


def _marker(chars: int) -> str:
    return f" … [cut {chars:,} chars]"


class _Walk:
    def __init__(self, removed: frozenset[str], description_chars: int) -> None:
        self.removed = removed
        self.description_chars = description_chars

    def schema(self, node: Any, required: bool) -> Any:
        """One schema position. ``required``: it is a property its object requires."""
        if not isinstance(node, dict):
            return node  # a boolean schema, or something no walk should guess about
        return self.object(node, required)

    def object(self, node: Json, required: bool) -> Json:
        out: Json = {}
        for key, value in node.items():
            if key in self.removed or (key == "default" and (value is None or required)):
                continue
            out[key] = self.value(node, key, value)
        return out

    def value(self, node: Json, key: str, value: Any) -> Any:
        if key == "description" and isinstance(value, str):
            return compact_description(value, self.description_chars)
        if key in _NAMED and isinstance(value, dict):
            names = _required(node) if key == "properties" else frozenset()
            return {name: self.schema(sub, name in names) for name, sub in value.items()}
        if key == "dependencies" and isinstance(value, dict):
            # Draft-07: each value is a subschema or a list of property names (data).
            return {name: self.schema(sub, False) for name, sub in value.items()}
        if (key in _ONE or key in _MANY) and isinstance(value, list):
            return [self.schema(sub, False) for sub in value]
        if key in _ONE:
            return self.schema(value, False)
        return value


def _required(node: Json) -> frozenset[str]:
    names = node.get("required")
    if not isinstance(names, list):
        return frozenset()
    return frozenset(name for name in names if isinstance(name, str))


def _refs(value: Any) -> Iterator[str]:
    """Every ``$ref`` and ``$dynamicRef`` string anywhere in ``value`` (data included: a guard
    may keep too much, never too little)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("$ref", "$dynamicRef") and isinstance(item, str):
                yield item
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _points_through_removed(ref: str) -> bool:
    if not ref.startswith("#/"):
        return False
    # RFC 6901: "~1" is "/", "~0" is "~".
    segments = [s.replace("~1", "/").replace("~0", "~") for s in ref[2:].split("/")]
    return any(s in METADATA or s == "default" for s in segments)
