"""JSON Merge Patch (RFC 7386): the appendix's examples, and the laws ⊕ must keep."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from state_strategies import objects, values

from skillstate.state import merge


def same(left: Any, right: Any) -> bool:
    """Equal as JSON: Python's ``True == 1 == 1.0`` would hide a type change."""
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


# RFC 7386, Appendix A: (target, patch, result).
RFC_EXAMPLES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "result"), RFC_EXAMPLES)
def test_rfc_7386_examples(target: Any, patch: Any, result: Any) -> None:
    assert same(merge(target, patch), result)


def test_key_order_is_stable() -> None:
    merged = merge({"a": 1, "b": 2, "c": 3}, {"d": 4, "b": 5, "a": None})
    assert list(merged) == ["b", "c", "d"]


@given(objects(nulls=False))
def test_identity(state: dict[str, Any]) -> None:
    assert same(merge(state, {}), state)


@given(values(nulls=True), values(nulls=True))
def test_idempotence(state: Any, patch: Any) -> None:
    once = merge(state, patch)
    assert same(merge(once, patch), once)


@given(objects(nulls=False), objects(nulls=True))
def test_null_deletes_and_other_keys_survive(state: dict[str, Any], patch: dict[str, Any]) -> None:
    merged = merge(state, patch)
    for key, value in patch.items():
        if value is None:
            assert key not in merged
    for key, value in state.items():
        if key not in patch:
            assert same(merged[key], value)


@given(objects(nulls=False), objects(nulls=True))
def test_arrays_and_scalars_replace_whole(state: dict[str, Any], patch: dict[str, Any]) -> None:
    merged = merge(state, patch)
    for key, value in patch.items():
        if value is not None and not isinstance(value, dict):
            assert same(merged[key], value)


def _null_members(value: Any) -> int:
    """Nulls held as object members, following objects only: an array is a value that a patch
    sets whole, nulls and all (RFC 7386 §2)."""
    if not isinstance(value, dict):
        return 0
    return sum(1 if item is None else _null_members(item) for item in value.values())


@given(objects(nulls=False), objects(nulls=True))
def test_patch_nulls_never_reach_the_result(state: dict[str, Any], patch: dict[str, Any]) -> None:
    assert _null_members(merge(state, patch)) == 0


@given(values(nulls=True), values(nulls=True))
def test_merge_is_pure(state: Any, patch: Any) -> None:
    state_before, patch_before = copy.deepcopy(state), copy.deepcopy(patch)
    merged = merge(state, patch)
    assert same(state, state_before)
    assert same(patch, patch_before)
    _scribble(merged)
    assert same(state, state_before)
    assert same(patch, patch_before)


def _scribble(value: Any) -> None:
    """Mutate every container in ``value``: the result must share none with the inputs."""
    if isinstance(value, dict):
        for item in value.values():
            _scribble(item)
        value["scribbled"] = True
    elif isinstance(value, list):
        for item in value:
            _scribble(item)
        value.append("scribbled")
