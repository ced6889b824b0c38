"""The pure schema walk: metadata out at every schema position, names and data untouched, the
defaults and whitespace rules, the marked cut, and a property test over generated schemas."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillstate.pipeline.schema_compaction import (
    METADATA,
    collapse,
    compact_description,
    compact_schema,
    cut,
)

Json = dict[str, Any]
KEPT_FACTS = ("type", "required", "enum", "const", "pattern", "format")
REMOVED = frozenset(
    [
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
    ]
)


def positions(schema: Any, path: str = "#") -> Iterator[tuple[str, Json, bool]]:
    """Every schema position of the shapes the tests build: (path, node, required)."""
    yield from _positions(schema, path, False)


def _positions(node: Any, path: str, required: bool) -> Iterator[tuple[str, Json, bool]]:
    if not isinstance(node, dict):
        return
    yield path, node, required
    names = node.get("required", [])
    for name, sub in node.get("properties", {}).items():
        yield from _positions(sub, f"{path}/properties/{name}", name in names)
    for name, sub in node.get("$defs", {}).items():
        yield from _positions(sub, f"{path}/$defs/{name}", False)
    for key in ("items", "additionalProperties", "not"):
        if key in node:
            yield from _positions(node[key], f"{path}/{key}", False)
    for key in ("anyOf", "oneOf", "allOf"):
        for i, sub in enumerate(node.get(key, [])):
            yield from _positions(sub, f"{path}/{key}/{i}", False)


def facts(schema: Json) -> list[tuple[str, str, Any]]:
    """What must never change: property names, and the kept keywords, at every position."""
    found: list[tuple[str, str, Any]] = []
    for path, node, _ in positions(schema):
        found.append((path, "names", list(node.get("properties", {}))))
        found += [(path, key, node[key]) for key in KEPT_FACTS if key in node]
    return found


def test_metadata_is_removed_at_every_depth() -> None:
    meta = {"title": "T", "$comment": "c", "examples": [1], "deprecated": False}
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:x",
        **meta,
        "type": "object",
        "properties": {
            "a": {**meta, "type": "array", "items": {**meta, "type": "string", "readOnly": True}},
            "b": {"anyOf": [{**meta, "type": "null"}, {"example": 1, "writeOnly": True}]},
            "c": {"markdownDescription": "**m**", "not": {**meta}},
        },
        "$defs": {"d": {**meta, "type": "integer"}},
        "additionalProperties": {**meta, "type": "number"},
    }
    out = compact_schema(schema)
    assert out == {
        "type": "object",
        "properties": {
            "a": {"type": "array", "items": {"type": "string"}},
            "b": {"anyOf": [{"type": "null"}, {}]},
            "c": {"not": {}},
        },
        "$defs": {"d": {"type": "integer"}},
        "additionalProperties": {"type": "number"},
    }
    assert METADATA == REMOVED
    for _, node, _ in positions(out):
        assert not REMOVED & set(node)


def test_the_input_is_not_changed() -> None:
    schema = {"title": "T", "properties": {"a": {"title": "A", "description": "x  y"}}}
    before = copy.deepcopy(schema)
    compact_schema(schema, 64)
    assert schema == before


def test_properties_named_like_keywords_stay() -> None:
    names = ["title", "default", "examples", "$schema", "description", "deprecated", "type"]
    schema = {
        "type": "object",
        "properties": {name: {"type": "string", "title": name} for name in names},
        "required": ["title", "default"],
    }
    out = compact_schema(schema)
    assert list(out["properties"]) == names
    assert all(sub == {"type": "string"} for sub in out["properties"].values())
    assert out["required"] == ["title", "default"]


def test_data_is_never_walked() -> None:
    data = {"title": "kept", "$schema": "kept", "default": None, "description": "a   b"}
    schema = {
        "enum": [data, "title"],
        "const": data,
        "default": data,
        "required": ["title"],
        "properties": {"x": {"type": "object", "examples": [data]}},
    }
    out = compact_schema(schema)
    assert out["enum"] == [data, "title"] and out["const"] == data and out["default"] == data
    assert out["properties"] == {"x": {"type": "object"}}


def test_operational_keywords_never_change() -> None:
    sub = {
        "type": ["string", "null"],
        "enum": ["a", "b", None],
        "pattern": "^[a-z]+$",
        "format": "uri",
        "minLength": 1,
        "maxLength": 9,
        "additionalProperties": False,
        "propertyNames": {"pattern": "^x"},
        "const": "a",
        "multipleOf": 2,
        "x-vendor": {"title": "data"},
    }
    schema = {"type": "object", "properties": {"p": sub}, "required": ["p"], "minProperties": 1}
    assert compact_schema(schema) == schema


def test_defaults_rule() -> None:
    schema = {
        "type": "object",
        "properties": {
            "req": {"type": "integer", "default": 5},
            "null": {"type": ["integer", "null"], "default": None},
            "opt": {"type": "integer", "default": 30},
            "nested": {
                "type": "object",
                "properties": {"inner": {"type": "boolean", "default": False}},
            },
        },
        "required": ["req"],
        "default": {},
    }
    out = compact_schema(schema)
    props = out["properties"]
    assert "default" not in props["req"]  # required: never omitted, the default is never used
    assert "default" not in props["null"]
    assert props["opt"]["default"] == 30  # says what leaving it out means
    assert props["nested"]["properties"]["inner"]["default"] is False
    assert out["default"] == {}


def test_required_only_counts_for_its_own_object() -> None:
    schema = {
        "properties": {"a": {"properties": {"b": {"default": 1}}, "default": {}}},
        "required": ["b"],
    }
    out = compact_schema(schema)
    assert out["properties"]["a"]["properties"]["b"] == {"default": 1}
    assert out["properties"]["a"]["default"] == {}


def test_whitespace_rule() -> None:
    text = "  Run a command.   \n\n\n\nOptions:\n- a    b  \n  - nested   item\n\n\nEnd.  "
    assert collapse(text) == "Run a command.\n\nOptions:\n- a b\n  - nested item\n\nEnd."
    schema = {"description": text, "properties": {"p": {"description": "x  \n\n\n y"}}}
    out = compact_schema(schema)
    assert out["description"] == collapse(text)
    assert out["properties"]["p"]["description"] == "x\n\n y"
    assert collapse(collapse(text)) == collapse(text)


def test_the_cut_is_off_by_default_and_marked_when_on() -> None:
    text = "word " * 1000
    schema = {"description": text, "properties": {"p": {"description": text}}}
    assert compact_schema(schema)["description"] == text.strip()
    out = compact_schema(schema, 200)
    for got in (out["description"], out["properties"]["p"]["description"]):
        assert len(got) <= 200
        head, marker = got.split(" … ")
        assert text.startswith(head) and marker == f"[cut {len(text.strip()) - len(head):,} chars]"
    assert compact_description(out["description"], 200) == out["description"]  # never recut


def test_cut_leaves_short_texts_alone() -> None:
    assert cut("short", 64) == "short"
    assert cut("x" * 64, 64) == "x" * 64
    assert cut("x" * 65, 0) == "x" * 65
    assert cut("y" * 1064, 64) == "y" * 44 + " … [cut 1,020 chars]"
    assert len(cut("y" * 100_000, 64)) <= 64


def test_a_non_local_ref_keeps_the_ids() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "title": "gone",
        "properties": {"a": {"$ref": "other.json#/x"}, "b": {"$id": "b.json", "type": "string"}},
    }
    out = compact_schema(schema)
    assert out["$id"] == schema["$id"] and out["properties"]["b"]["$id"] == "b.json"
    assert "title" not in out
    local = {"$id": "urn:x", "$defs": {"d": {}}, "properties": {"a": {"$ref": "#/$defs/d"}}}
    assert "$id" not in compact_schema(local)


def test_a_ref_through_a_removed_keyword_keeps_the_schema() -> None:
    schema = {"examples": [{"type": "string"}], "properties": {"a": {"$ref": "#/examples/0"}}}
    assert compact_schema(schema) == schema


def test_determinism_follows_content_not_identity_or_order() -> None:
    a = {"title": "t", "type": "object", "properties": {"x": {"type": "string"}, "y": {}}}
    b = {"properties": {"x": {"type": "string"}, "y": {}}, "type": "object", "title": "t"}
    assert compact_schema(a) == compact_schema(copy.deepcopy(a))
    assert list(compact_schema(a)) == ["type", "properties"]  # the client's key order, kept
    assert list(compact_schema(b)) == ["properties", "type"]


@pytest.mark.parametrize("schema", [{}, {"type": "object"}, {"items": True, "not": False}])
def test_nothing_to_remove_gives_an_equal_schema(schema: Json) -> None:
    assert compact_schema(schema) == schema


# --- property test -------------------------------------------------------------------------

NAMES = st.sampled_from(
    ["path", "mode", "title", "default", "examples", "$schema", "description", "type", "enum"]
)
DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=6,
)
DESCRIPTIONS = st.text(alphabet=st.sampled_from("ab \n\t."), max_size=40)
METADATA_KEYS = st.sampled_from(sorted(REMOVED | {"default"}))


def _with_extras(draw: st.DrawFn, node: Json) -> Json:
    for key in draw(st.lists(METADATA_KEYS, max_size=3)):
        node[key] = draw(DATA)
    if draw(st.booleans()):
        node["description"] = draw(DESCRIPTIONS)
    return node


@st.composite
def leaves(draw: st.DrawFn) -> Json:
    node: Json = {"type": draw(st.sampled_from(["string", "integer", "boolean", "null"]))}
    if draw(st.booleans()):
        node["enum"] = draw(st.lists(DATA, max_size=3))
    if draw(st.booleans()):
        node["const"] = draw(DATA)
    if draw(st.booleans()):
        node["pattern"] = draw(st.sampled_from(["^a$", "[0-9]+"]))
    if draw(st.booleans()):
        node["format"] = draw(st.sampled_from(["uri", "date-time"]))
    return _with_extras(draw, node)


def _compound(children: st.SearchStrategy[Json]) -> st.SearchStrategy[Json]:
    @st.composite
    def build(draw: st.DrawFn) -> Json:
        shape = draw(st.sampled_from(["object", "array", "anyOf", "defs"]))
        node: Json
        if shape == "object":
            props = draw(st.dictionaries(NAMES, children, max_size=4))
            node = {"type": "object", "properties": props}
            node["required"] = draw(st.lists(st.sampled_from([*props, "absent"]), unique=True))
        elif shape == "array":
            node = {"type": "array", "items": draw(children)}
        elif shape == "anyOf":
            node = {"anyOf": draw(st.lists(children, min_size=1, max_size=3))}
        else:
            node = {"$defs": draw(st.dictionaries(NAMES, children, max_size=2)), "type": "object"}
        return _with_extras(draw, node)

    return build()


SCHEMAS = st.recursive(leaves(), _compound, max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(SCHEMAS, st.sampled_from([0, 64]))
def test_compaction_keeps_every_fact_and_removes_every_keyword(schema: Json, chars: int) -> None:
    out = compact_schema(schema, chars)
    assert facts(out) == facts(schema)
    for _, node, required in positions(out):
        assert not REMOVED & set(node)
        if "default" in node:
            assert node["default"] is not None and not required
        if isinstance(node.get("description"), str):
            assert node["description"] == compact_description(node["description"], chars)
    assert compact_schema(out, chars) == out  # idempotent
