"""Properties of ``apply_patch`` over generated states and patches, against tight bounds so
that generated patches hit them often."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from state_strategies import objects, values

from skillstate.state import Bounds, Shape, StateSchema, apply_patch, merge
from skillstate.state.schema import JsonKind
from skillstate.support import jsonio

BOUNDS = Bounds(max_patch_bytes=120, max_state_bytes=200, max_depth=4, max_key_length=4)
SCHEMA = StateSchema(
    {
        "a": Shape(),
        "b": Shape(JsonKind.OBJECT, entries=Shape(JsonKind.STRING)),
        "c": Shape(JsonKind.INTEGER),
    },
    BOUNDS,
)

PATCHES = objects(nulls=True) | st.dictionaries(
    st.sampled_from(["a", "b", "zz", "__proto__"]), values(nulls=True), max_size=3
)


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 1


def holds_null(value: Any) -> bool:
    if isinstance(value, dict):
        return any(holds_null(item) for item in value.values())
    if isinstance(value, list):
        return any(holds_null(item) for item in value)
    return value is None


def within_bounds(state: dict[str, Any]) -> bool:
    return (
        len(jsonio.dumps(state)) <= BOUNDS.max_state_bytes
        and depth(state) <= BOUNDS.max_depth
        and set(state) <= set(SCHEMA.keys)
        and not holds_null(state)
    )


@given(st.lists(PATCHES, max_size=8))
def test_a_run_of_patches_never_leaves_the_bounds(patches: list[dict[str, Any]]) -> None:
    state: dict[str, Any] = {}
    for patch in patches:
        before = copy.deepcopy(state)
        patch_before = copy.deepcopy(patch)
        outcome = apply_patch(SCHEMA, state, patch)
        assert json.dumps(patch) == json.dumps(patch_before)  # the patch is not mutated
        assert json.dumps(state) == json.dumps(before)  # nor the state
        if outcome.accepted:
            assert not outcome.rejected
            assert json.dumps(outcome.state) == json.dumps(merge(state, outcome.applied))
        else:
            assert outcome.state is state
        assert within_bounds(outcome.state)
        state = outcome.state


@given(objects(nulls=True))
def test_a_rejected_patch_changes_nothing(patch: dict[str, Any]) -> None:
    state = {"a": "text", "b": {"k": "v"}, "c": 1}
    outcome = apply_patch(SCHEMA, state, patch)
    if not outcome.accepted:
        assert outcome.state == {"a": "text", "b": {"k": "v"}, "c": 1}
        assert outcome.applied == {}
        assert not outcome.changed


@given(objects(nulls=True))
def test_an_accepted_patch_is_idempotent(patch: dict[str, Any]) -> None:
    once = apply_patch(SCHEMA, {}, patch)
    if once.accepted:
        twice = apply_patch(SCHEMA, once.state, patch)
        assert twice.accepted and not twice.changed
