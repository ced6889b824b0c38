"""``apply_patch``: the one validator. Drops are reported, mismatches and bounds reject, and
a rejected patch changes nothing."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from skillstate.state import Bounds, PatchOutcome, StateSchema, apply_patch
from skillstate.support import jsonio

AGENT = StateSchema.from_keys(None)


def pointers(outcome: PatchOutcome) -> list[str]:
    return [issue.pointer for issue in (*outcome.rejected, *outcome.dropped)]


def rejects(schema: StateSchema, state: dict[str, Any], patch: object) -> PatchOutcome:
    before = copy.deepcopy(state)
    outcome = apply_patch(schema, state, patch)
    assert not outcome.accepted
    assert outcome.rejected
    assert outcome.state is state
    assert state == before
    assert outcome.applied == {}
    assert not outcome.changed
    return outcome


def test_accepts_a_patch_of_the_agent_schema() -> None:
    state = {"objective": "fix the build", "plan": {"tests": {"step": "run", "status": "todo"}}}
    patch = {"plan": {"tests": {"status": "done"}, "lint": {"step": "ruff"}}, "step": 2}
    outcome = apply_patch(AGENT, state, patch)
    assert outcome.accepted and outcome.changed
    assert outcome.state == {
        "objective": "fix the build",
        "plan": {"tests": {"step": "run", "status": "done"}, "lint": {"step": "ruff"}},
        "step": 2,
    }
    assert outcome.applied == patch
    assert outcome.reasons == []


def test_null_deletes_a_key_and_an_entry() -> None:
    state = {"objective": "ship", "files": {"a.py": "read", "b.py": "edited"}}
    outcome = apply_patch(AGENT, state, {"objective": None, "files": {"b.py": None}})
    assert outcome.accepted
    assert outcome.state == {"files": {"a.py": "read"}}


def test_keys_outside_the_schema_are_dropped_not_fatal() -> None:
    patch = {"mood": "good", "step": 1, "working": {"cwd": "/src", "shell": "bash"}}
    outcome = apply_patch(AGENT, {}, patch)
    assert outcome.accepted
    assert outcome.state == {"step": 1, "working": {"cwd": "/src"}}
    assert outcome.applied == outcome.state
    assert pointers(outcome) == ["/mood", "/working/shell"]
    assert all("dropped" in issue.reason for issue in outcome.dropped)


def test_a_patch_of_only_dropped_keys_changes_nothing() -> None:
    outcome = apply_patch(AGENT, {"step": 1}, {"mood": "good"})
    assert outcome.accepted and not outcome.changed
    assert outcome.state == {"step": 1}


def test_changed_is_false_for_a_patch_that_restates_the_state() -> None:
    state = {"step": 1, "done": {"a": "x"}}
    assert not apply_patch(AGENT, state, {"done": {"a": "x"}}).changed
    assert not apply_patch(AGENT, state, {}).changed
    assert not apply_patch(AGENT, state, {"open": None}).changed


def test_a_type_mismatch_rejects_the_whole_patch() -> None:
    outcome = rejects(AGENT, {"step": 1}, {"objective": "ok", "step": "two"})
    assert pointers(outcome) == ["/step"]
    assert "must be an integer, not a string" in outcome.reasons[0]


@pytest.mark.parametrize(
    ("patch", "pointer"),
    [
        ({"step": True}, "/step"),
        ({"step": 2.0}, "/step"),
        ({"plan": ["tests"]}, "/plan"),
        ({"plan": {"tests": "run them"}}, "/plan/tests"),
        ({"plan": {"tests": {"status": "finished"}}}, "/plan/tests/status"),
        ({"plan": {"tests": {"step": 7}}}, "/plan/tests/step"),
        ({"objective": "one\ntwo"}, "/objective"),
        ({"working": {"active_files": "a.py"}}, "/working/active_files"),
        ({"working": {"active_files": ["a.py", 3]}}, "/working/active_files/1"),
        ({"files": {"src/a~b.py": 1}}, "/files/src~1a~0b.py"),
    ],
)
def test_declared_types_and_choices(patch: dict[str, Any], pointer: str) -> None:
    assert pointers(rejects(AGENT, {}, patch)) == [pointer]


def test_every_mismatch_is_listed() -> None:
    outcome = rejects(AGENT, {}, {"step": "x", "done": {"a": 1, "b": "ok", "c": []}})
    assert pointers(outcome) == ["/step", "/done/a", "/done/c"]


def test_dropped_members_are_still_reported_on_rejection() -> None:
    outcome = rejects(AGENT, {}, {"mood": 1, "step": "x"})
    assert [issue.pointer for issue in outcome.dropped] == ["/mood"]


@pytest.mark.parametrize("name", ["__proto__", "constructor", "prototype"])
def test_reserved_keys_are_refused_anywhere(name: str) -> None:
    notes = StateSchema.from_keys(["notes"])
    assert pointers(rejects(AGENT, {}, {name: {}})) == [f"/{name}"]
    assert pointers(rejects(AGENT, {}, {"findings": {name: "x"}})) == [f"/findings/{name}"]
    deep = {"notes": {"a": [{"b": {name: 1}}]}}
    assert pointers(rejects(notes, {}, deep)) == [f"/notes/a/0/b/{name}"]


def test_long_keys_are_refused() -> None:
    schema = StateSchema.from_keys(["done"], bounds=Bounds(max_key_length=8))
    assert pointers(rejects(schema, {}, {"done": {"x" * 9: "y"}})) == ["/done/" + "x" * 9]
    assert apply_patch(schema, {}, {"done": {"x" * 8: "y"}}).accepted


def test_arrays_cannot_hold_null() -> None:
    outcome = rejects(AGENT, {}, {"working": {"active_files": ["a.py", None]}})
    assert pointers(outcome) == ["/working/active_files/1"]


@pytest.mark.parametrize("patch", [None, [], "patch", 3, {"step": float("nan")}, {"step": {1}}])
def test_what_is_not_a_json_object_is_refused(patch: object) -> None:
    rejects(StateSchema.from_keys(["step"]), {}, patch)


def test_non_string_keys_are_refused() -> None:
    rejects(StateSchema.from_keys(["notes"]), {}, {"notes": {1: "x"}})


def test_inferred_types_follow_the_current_value() -> None:
    schema = StateSchema.from_keys(["notes", "count"])
    state = apply_patch(schema, {}, {"notes": "a", "count": 1}).state
    rejects(schema, state, {"notes": {"x": 1}})
    assert apply_patch(schema, state, {"count": 1.5}).accepted  # an integer infers a number
    emptied = apply_patch(schema, state, {"notes": None}).state
    assert apply_patch(schema, emptied, {"notes": {"x": 1}}).state == {
        "count": 1,
        "notes": {"x": 1},
    }


def test_the_patch_size_is_bounded() -> None:
    schema = StateSchema.from_keys(None, bounds=Bounds(max_patch_bytes=40))
    patch = {"objective": "x" * 25}
    assert len(jsonio.dumps(patch)) == 41
    rejects(schema, {}, patch)
    assert apply_patch(schema, {}, {"objective": "x" * 24}).accepted


def test_the_state_size_is_bounded() -> None:
    schema = StateSchema.from_keys(None, bounds=Bounds(max_state_bytes=60))
    state = apply_patch(schema, {}, {"findings": {"a": "x" * 30}}).state
    outcome = rejects(schema, state, {"findings": {"b": "y" * 20}})
    assert "at most 60" in outcome.reasons[0]


def test_the_depth_is_bounded() -> None:
    schema = StateSchema.from_keys(["notes"], bounds=Bounds(max_depth=4))
    assert apply_patch(schema, {}, {"notes": {"a": {"b": 1}}}).accepted
    rejects(schema, {}, {"notes": {"a": {"b": [1]}}})


def test_a_hostile_depth_is_refused_without_recursing() -> None:
    deep: dict[str, Any] = {}
    for _ in range(100_000):
        deep = {"a": deep}
    rejects(StateSchema.from_keys(["a"]), {}, deep)
