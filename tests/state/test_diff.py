"""Σ changes since a snapshot: the merge patch that turns the snapshot into the current Σ."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from state_strategies import objects

from skillstate.state.diff import same_json, state_changes
from skillstate.state.merge import merge


def same(left: Any, right: Any) -> bool:
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


@given(objects(nulls=False), objects(nulls=False))
def test_merging_the_changes_into_the_snapshot_gives_the_current_state(
    snapshot: dict[str, Any], current: dict[str, Any]
) -> None:
    assert same(merge(snapshot, state_changes(snapshot, current)), current)


@given(objects(nulls=False))
def test_a_state_has_no_changes_from_itself(state: dict[str, Any]) -> None:
    assert state_changes(state, copy.deepcopy(state)) == {}


@given(objects(nulls=False), objects(nulls=False))
def test_the_inputs_are_not_mutated_and_the_patch_shares_nothing(
    snapshot: dict[str, Any], current: dict[str, Any]
) -> None:
    before = copy.deepcopy((snapshot, current))
    patch = state_changes(snapshot, current)
    assert same((snapshot, current), before)
    _scramble(patch)
    assert same((snapshot, current), before)


def _scramble(value: Any) -> None:
    if isinstance(value, dict):
        for key in list(value):
            _scramble(value[key])
        value["zz-scrambled"] = 1
    elif isinstance(value, list):
        for item in value:
            _scramble(item)
        value.append("scrambled")


def test_only_changed_entries_travel_and_removed_keys_are_null() -> None:
    snapshot = {
        "objective": "fix the parser",
        "files": {"a.py": "read", "b.py": "edited"},
        "plan": {"tests": {"step": "run tests", "status": "todo"}},
        "open": {"q1": "why?"},
    }
    current = {
        "objective": "fix the parser",
        "files": {"a.py": "read", "b.py": "edited, tests pass", "c.py": "written"},
        "plan": {"tests": {"step": "run tests", "status": "done"}},
        "step": 7,
    }
    assert state_changes(snapshot, current) == {
        "files": {"b.py": "edited, tests pass", "c.py": "written"},
        "plan": {"tests": {"status": "done"}},
        "open": None,
        "step": 7,
    }


def test_arrays_are_sent_whole() -> None:
    snapshot = {"working": {"active_files": ["a.py", "b.py"], "cwd": "/w"}}
    current = {"working": {"active_files": ["a.py", "c.py"], "cwd": "/w"}}
    assert state_changes(snapshot, current) == {"working": {"active_files": ["a.py", "c.py"]}}


def test_an_emptied_object_is_expressed_by_deleting_its_members() -> None:
    patch = state_changes({"files": {"a.py": "read"}}, {"files": {}})
    assert patch == {"files": {"a.py": None}}
    assert merge({"files": {"a.py": "read"}}, patch) == {"files": {}}


def test_an_object_replacing_a_scalar_is_sent_whole() -> None:
    assert state_changes({"notes": "x"}, {"notes": {"a": "b"}}) == {"notes": {"a": "b"}}


def test_a_change_of_json_type_is_a_change() -> None:
    assert state_changes({"flag": 1}, {"flag": True}) == {"flag": True}
    assert state_changes({"n": 1}, {"n": 1.0}) == {"n": 1.0}
    assert state_changes({"a": [1]}, {"a": [True]}) == {"a": [True]}


@given(st.integers(), st.booleans())
def test_same_json_tells_booleans_from_numbers(number: int, flag: bool) -> None:
    assert not same_json(number, flag)
    assert same_json({"a": [number]}, {"a": [number]})
    assert not same_json({"a": 1}, {"b": 1})
