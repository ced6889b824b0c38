"""Σ's schema: the default agent schema, schemas from ``--schema`` keys, bounds, the initial
state, and the package's public surface."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import skillstate.state
from skillstate.config import load_settings
from skillstate.state import (
    MAX_DEPTH,
    MAX_PATCH_BYTES,
    MAX_STATE_BYTES,
    PLAN_STATUSES,
    Bounds,
    JsonKind,
    SchemaError,
    Shape,
    StateSchema,
    apply_patch,
    default_agent_shapes,
    initial_state,
)
from skillstate.state.schema import kind_of

AGENT_KEYS = [
    "objective",
    "plan",
    "done",
    "findings",
    "files",
    "decisions",
    "errors_tried",
    "working",
    "open",
    "step",
]


def test_public_surface() -> None:
    assert sorted(skillstate.state.__all__) == sorted(
        [
            "ENVELOPE_SHAPE",
            "MAX_DEPTH",
            "MAX_KEY_LENGTH",
            "MAX_PATCH_BYTES",
            "MAX_STATE_BYTES",
            "PLAN_STATUSES",
            "RECALL_TOOL",
            "SKILL_STATE_TOOL",
            "Bounds",
            "Envelope",
            "EnvelopeError",
            "Issue",
            "JsonKind",
            "PatchOutcome",
            "RecallByQuery",
            "RecallByRef",
            "SchemaError",
            "Shape",
            "StateSchema",
            "ToolCallError",
            "apply_patch",
            "correction_note",
            "default_agent_shapes",
            "initial_state",
            "merge",
            "parse_envelope",
            "parse_recall_call",
            "parse_skill_state_call",
            "recall_tool",
            "skill_state_tool",
        ]
    )


def test_the_default_agent_schema() -> None:
    schema = StateSchema.from_keys(None)
    assert list(schema.keys) == AGENT_KEYS
    assert schema.bounds == Bounds(MAX_PATCH_BYTES, MAX_STATE_BYTES, MAX_DEPTH)
    plan = schema.keys["plan"]
    assert plan.entries is not None and plan.entries.fields is not None
    assert (
        plan.entries.fields["status"].choices
        == PLAN_STATUSES
        == (
            "done",
            "active",
            "todo",
            "blocked",
        )
    )
    growing = [key for key, shape in schema.keys.items() if shape.entries is not None]
    assert growing == ["plan", "done", "findings", "files", "decisions", "errors_tried", "open"]


def test_a_full_agent_state_is_accepted() -> None:
    state = {
        "objective": "make the tests pass",
        "plan": {"repro": {"step": "reproduce", "status": "done"}, "fix": {"step": "fix"}},
        "done": {"repro": "fails in test_io"},
        "findings": {"cause": "off by one"},
        "files": {"src/io.py": "read_chunk, line 40"},
        "decisions": {"keep-api": "no signature change"},
        "errors_tried": {"retry": "did not help"},
        "working": {"cwd": "/repo", "branch": "fix-io", "active_files": ["src/io.py"]},
        "open": {"py310": "does 3.10 matter?"},
        "step": 4,
    }
    outcome = apply_patch(StateSchema.from_keys(None), {}, state)
    assert outcome.accepted and outcome.reasons == []
    assert outcome.state == state


def test_keys_from_the_command_line() -> None:
    schema = StateSchema.from_keys(["step", "notes", "findings"])
    assert list(schema.keys) == ["step", "notes", "findings"]
    declared = default_agent_shapes()
    assert schema.keys["step"] == declared["step"]
    assert schema.keys["findings"] == declared["findings"]
    assert schema.keys["notes"].kind is None


def test_schema_and_initial_state_from_settings(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path), "SKILLSTATE_INITIAL_STATE": '{"notes": "start"}'}
    settings = load_settings(cli={"schema": "step,notes"}, environ=environ)
    schema = StateSchema.from_keys(settings.state_schema)
    assert list(schema.keys) == ["step", "notes"]
    assert initial_state(schema, settings.initial_state) == {"notes": "start"}
    default = load_settings(environ={"HOME": str(tmp_path)})
    assert list(StateSchema.from_keys(default.state_schema).keys) == AGENT_KEYS


@pytest.mark.parametrize(
    "keys", [[], ["a", "a"], ["__proto__"], ["constructor"], [""], ["k" * 300]]
)
def test_bad_keys_are_schema_errors(keys: list[str]) -> None:
    with pytest.raises(SchemaError):
        StateSchema.from_keys(keys)


@pytest.mark.parametrize(
    "name", ["max_patch_bytes", "max_state_bytes", "max_depth", "max_key_length"]
)
def test_bounds_are_positive(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        Bounds(**{name: 0})


def test_describe_names_every_key_and_shape() -> None:
    text = StateSchema.from_keys(None).describe()
    lines = text.splitlines()
    assert [line.split(":")[0] for line in lines] == [f"- {key}" for key in AGENT_KEYS]
    assert "done|active|todo|blocked" in text
    assert "- working: {cwd: string, branch: string, active_files: array of string}" in text
    assert "inferred" in StateSchema.from_keys(["notes"]).describe()
    assert Shape().describe() == "any JSON value"


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (True, JsonKind.BOOLEAN),
        (0, JsonKind.INTEGER),
        (2**80, JsonKind.INTEGER),
        (0.5, JsonKind.NUMBER),
        (3.0, JsonKind.NUMBER),
        (math.nan, None),
        (math.inf, None),
        ("", JsonKind.STRING),
        ([], JsonKind.ARRAY),
        ({}, JsonKind.OBJECT),
        (None, None),
        ((1,), None),
    ],
)
def test_kind_of(value: object, kind: JsonKind | None) -> None:
    assert kind_of(value) is kind


def test_initial_state_is_checked_like_a_patch() -> None:
    schema = StateSchema.from_keys(["step", "notes"])
    assert initial_state(schema, {"step": 1, "notes": {"a": "b"}}) == {
        "step": 1,
        "notes": {"a": "b"},
    }
    assert initial_state(schema, {}) == {}


@pytest.mark.parametrize(
    ("state", "why"),
    [
        ({"mood": 1}, "not a key"),
        ({"step": "one"}, "must be an integer"),
        ({"notes": None}, "null"),
        ({"notes": {"a": None}}, "null"),
        ({"notes": {"constructor": 1}}, "reserved"),
    ],
)
def test_a_bad_initial_state_is_an_error(state: dict[str, Any], why: str) -> None:
    with pytest.raises(SchemaError, match=why):
        initial_state(StateSchema.from_keys(["step", "notes"]), state)


def test_the_initial_state_sets_inferred_types() -> None:
    schema = StateSchema.from_keys(["notes"])
    state = initial_state(schema, {"notes": ["a"]})
    assert not apply_patch(schema, state, {"notes": "b"}).accepted
    assert apply_patch(schema, state, {"notes": ["b"]}).accepted
