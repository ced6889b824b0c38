"""Paper mode's reply envelope: where it may sit in a reply, what is an error, and the note
that asks the model again."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from state_strategies import objects, values

from skillstate.state import Envelope, EnvelopeError, correction_note, parse_envelope
from skillstate.state.envelope import ENVELOPE_SHAPE

GOOD = '{"state_patch": {"step": 2}, "action": "run the tests"}'


def error(text: str) -> EnvelopeError:
    parsed = parse_envelope(text)
    assert isinstance(parsed, EnvelopeError), parsed
    return parsed


def test_the_whole_reply() -> None:
    assert parse_envelope(f"\n  {GOOD}\n") == Envelope({"step": 2}, "run the tests")


def test_a_fenced_block_among_prose() -> None:
    text = f"I will run the tests now.\n\n```json\n{GOOD}\n```\n\nThat should settle it."
    assert parse_envelope(text) == Envelope({"step": 2}, "run the tests")


def test_the_last_fenced_json_block_counts() -> None:
    draft = '{"state_patch": {}, "action": "draft"}'
    text = f"Draft:\n```json\n{draft}\n```\nFinal:\n```JSON\n{GOOD}\n```\n```python\nx = 1\n```"
    assert parse_envelope(text) == Envelope({"step": 2}, "run the tests")


def test_a_fence_closes_only_on_a_fence_as_long() -> None:
    inner = '{"state_patch": {},\n"action": "x"}'
    assert parse_envelope(f"Here:\n````json\n{inner}\n````\n") == Envelope({}, "x")
    # Closed by the ``` line, the body would parse; inside a ```` block that line is content.
    assert error(f"Here:\n````json\n{inner}\n```\n").code == "invalid_json"


def test_an_unclosed_block_runs_to_the_end() -> None:
    assert parse_envelope(f"Here it is:\n```json\n{GOOD}\n") == Envelope(
        {"step": 2}, "run the tests"
    )


@pytest.mark.parametrize("action", ["done", {"tool": "bash", "cmd": "ls"}, None, 3, [1, 2]])
def test_action_is_any_json_value(action: Any) -> None:
    text = json.dumps({"action": action, "state_patch": {}})
    assert parse_envelope(text) == Envelope({}, action)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", "no_json"),
        ("I think we should run the tests.", "no_json"),
        ("Look:\n```python\nprint(1)\n```", "no_json"),
        ('{"state_patch": {}, "action": ', "invalid_json"),
        ('Here:\n```json\n{"state_patch": {}\n```', "invalid_json"),
        ("Here:\n```json\n\n```", "invalid_json"),
        ('[{"state_patch": {}, "action": 1}]', "not_object"),
        ('"just text"', "not_object"),
        ('{"state_patch": {}}', "missing_keys"),
        ('{"action": 1}', "missing_keys"),
        ('{"state_patch": {}, "action": 1, "thought": "hm"}', "extra_keys"),
        ('{"state_patch": [], "action": 1}', "patch_not_object"),
        ('{"state_patch": null, "action": 1}', "patch_not_object"),
        ('{"state_patch": "step=2", "action": 1}', "patch_not_object"),
    ],
)
def test_errors(text: str, code: str) -> None:
    assert error(text).code == code


def test_error_reasons_name_the_problem() -> None:
    assert "'action'" in error('{"state_patch": {}}').reason
    assert "'thought'" in error('{"state_patch": {}, "action": 1, "thought": 2}').reason
    assert "an array" in error('{"state_patch": [], "action": 1}').reason
    assert "line 1" in error('{"state_patch": {}, "action": ').reason


def test_the_correction_note_says_what_was_wrong_and_the_shape() -> None:
    failure = error('{"state_patch": {}}')
    note = correction_note(failure)
    assert failure.reason in note
    assert ENVELOPE_SHAPE in note
    assert "null deletes" in note
    assert len(note) < 600


@given(objects(nulls=True), values(nulls=True), st.sampled_from(["bare", "fenced"]))
def test_any_envelope_round_trips(patch: dict[str, Any], action: Any, how: str) -> None:
    text = json.dumps({"state_patch": patch, "action": action}, indent=2)
    if how == "fenced":
        text = f"Thinking it over.\n```json\n{text}\n```\nDone."
    parsed = parse_envelope(text)
    assert isinstance(parsed, Envelope)
    assert json.dumps([parsed.state_patch, parsed.action]) == json.dumps([patch, action])
