"""The schema's merge rules (``state.rules``): with ``replace`` everywhere a patch combines as
JSON Merge Patch exactly; ``union`` is idempotent and never loses a key or an item; ``append``
and ``sum`` are associative; ``max`` is idempotent and commutative; a ``set_once`` value is
never overwritten. What a rule keeps from a patch is said, the rest applied; a patch with a
value of the wrong type applies nothing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillstate.config.values import check_schema
from skillstate.state.merge import apply_patch, merge
from skillstate.state.rules import combine
from skillstate.state.schema import JsonKind, Rule, SchemaError, Shape, StateSchema

SLUG = st.sampled_from(["a", "b", "c", "d"])
SCALAR = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.booleans())
JSON: st.SearchStrategy[Any] = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(SLUG, inner, max_size=3)),
    max_leaves=8,
)
PATCH_VALUE: st.SearchStrategy[Any] = st.recursive(
    st.one_of(SCALAR, st.none()),
    lambda inner: st.one_of(st.lists(JSON, max_size=3), st.dictionaries(SLUG, inner, max_size=3)),
    max_leaves=8,
)
FREE = StateSchema({key: Shape() for key in ("a", "b", "c", "d")})


def _schema(rule: Rule, kind: JsonKind | None = None, entries: Shape | None = None) -> StateSchema:
    return StateSchema({"k": Shape(kind, entries=entries, rule=rule)})


@given(state=st.dictionaries(SLUG, JSON, max_size=4), patch=st.dictionaries(SLUG, PATCH_VALUE))
def test_replace_everywhere_is_json_merge_patch(
    state: dict[str, Any], patch: dict[str, Any]
) -> None:
    combined, left = combine(FREE, state, patch)
    assert combined == merge(state, patch) and not left


UNION_MAP = _schema(Rule.UNION, JsonKind.OBJECT, entries=Shape(JsonKind.STRING))
WORDS = st.dictionaries(SLUG, st.one_of(st.text(max_size=3), st.none()), max_size=4)


@given(held=st.dictionaries(SLUG, st.text(max_size=3), max_size=4), patch=WORDS)
def test_union_of_a_map_is_idempotent_and_loses_no_key(
    held: dict[str, str], patch: dict[str, str | None]
) -> None:
    state = {"k": held}
    once, _ = combine(UNION_MAP, state, {"k": patch})
    twice, _ = combine(UNION_MAP, once, {"k": patch})
    assert once == twice
    assert set(held) <= set(once.get("k", {}))
    added = {key for key, value in patch.items() if value is not None}
    assert set(once.get("k", {})) == set(held) | added


@given(held=st.lists(SCALAR, max_size=5), patch=st.lists(SCALAR, max_size=5))
def test_union_of_an_array_is_idempotent_and_loses_no_item(
    held: list[Any], patch: list[Any]
) -> None:
    schema = _schema(Rule.UNION, JsonKind.ARRAY)
    once, _ = combine(schema, {"k": held}, {"k": patch})
    twice, _ = combine(schema, once, {"k": patch})
    assert once == twice and once["k"][: len(held)] == held
    assert all(item in once["k"] for item in patch)


@given(
    held=st.lists(SCALAR, max_size=4),
    p=st.lists(SCALAR, max_size=4),
    q=st.lists(SCALAR, max_size=4),
)
def test_append_is_associative(held: list[Any], p: list[Any], q: list[Any]) -> None:
    schema = _schema(Rule.APPEND, JsonKind.ARRAY)
    stepwise, _ = combine(schema, combine(schema, {"k": held}, {"k": p})[0], {"k": q})
    at_once, _ = combine(schema, {"k": held}, {"k": p + q})
    assert stepwise == at_once == {"k": held + p + q}


@given(held=st.integers(-100, 100), a=st.integers(-100, 100), b=st.integers(-100, 100))
def test_sum_is_associative_and_max_commutative_and_idempotent(held: int, a: int, b: int) -> None:
    add = _schema(Rule.SUM, JsonKind.INTEGER)
    stepwise, _ = combine(add, combine(add, {"k": held}, {"k": a})[0], {"k": b})
    assert stepwise == combine(add, {"k": held}, {"k": a + b})[0] == {"k": held + a + b}
    top = _schema(Rule.MAX, JsonKind.INTEGER)
    ab, _ = combine(top, combine(top, {"k": held}, {"k": a})[0], {"k": b})
    ba, _ = combine(top, combine(top, {"k": held}, {"k": b})[0], {"k": a})
    assert ab == ba == {"k": max(held, a, b)}
    assert combine(top, ab, {"k": a})[0] == ab


@given(first=JSON, later=st.lists(st.one_of(JSON, st.none()), max_size=4))
def test_a_set_once_value_is_never_overwritten(first: Any, later: list[Any]) -> None:
    schema = _schema(Rule.SET_ONCE)
    state, _ = combine(schema, {}, {"k": first})
    for value in later:
        state, left = combine(schema, state, {"k": value})
        assert state == {"k": first}
        assert bool(left) == (value != first)


def test_the_default_schema_keeps_what_was_learned_and_says_what_it_kept() -> None:
    schema = StateSchema.from_keys(None)
    state = {"step": 7, "findings": {"port": "8789", "db": "sqlite"}, "open": {"q": "why?"}}
    patch = {"step": 3, "findings": {"port": None, "db": "postgres"}, "open": {"q": None}}
    outcome = apply_patch(schema, state, patch)
    assert outcome.accepted
    assert outcome.state == {"step": 7, "findings": {"port": "8789", "db": "postgres"}, "open": {}}
    assert [str(issue) for issue in outcome.dropped] == [
        "/findings/port: is kept by the union rule: null does not delete it"
    ]
    assert "findings: object slug -> string — facts learned; add or update, never delete" in (
        schema.describe()
    )
    assert "step: integer — the number of the current step; never lowered" in schema.describe()


def test_a_patch_with_a_value_of_the_wrong_type_applies_nothing() -> None:
    schema = StateSchema.from_keys(["count:sum", "seen:union", "name:set_once"])
    state = {"count": 2, "seen": ["a"]}
    refused = apply_patch(schema, state, {"count": 1, "seen": "b", "name": "x"})
    assert not refused.accepted and refused.state is state
    assert "union rule" in refused.reasons[0]
    done = apply_patch(schema, state, {"count": 1, "seen": ["b"], "name": "x"})
    assert done.state == {"count": 3, "seen": ["a", "b"], "name": "x"}


@pytest.mark.parametrize(
    ("keys", "why"),
    [
        (["findings:sum"], "does not combine object"),
        (["count:most"], "is not a rule"),
        (["count:sum", "count"], "once"),
    ],
)
def test_a_schema_names_only_rules_that_fit(keys: list[str], why: str) -> None:
    with pytest.raises(SchemaError, match=why):
        StateSchema.from_keys(keys)
    with pytest.raises(ValueError, match=why):
        check_schema(tuple(keys))
