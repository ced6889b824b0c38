"""The internal tools' definitions and the validators of their calls."""

from __future__ import annotations

import json

import pytest

from skillstate.conversation import Message, Request, Text, Wire
from skillstate.protocols import adapter
from skillstate.state import (
    RECALL_TOOL,
    SKILL_STATE_TOOL,
    RecallByQuery,
    RecallByRef,
    StateSchema,
    ToolCallError,
    parse_recall_call,
    parse_skill_state_call,
    recall_tool,
    skill_state_tool,
)
from skillstate.state.tools import DEFAULT_RECALL_CONTEXT, MAX_RECALL_CONTEXT


def test_names() -> None:
    assert (SKILL_STATE_TOOL, RECALL_TOOL) == ("skill_state", "recall")
    assert skill_state_tool(StateSchema.from_keys(None)).name == SKILL_STATE_TOOL
    assert recall_tool().name == RECALL_TOOL


@pytest.mark.parametrize("keys", [None, ["step", "notes", "findings"]])
def test_skill_state_describes_the_schema(keys: list[str] | None) -> None:
    schema = StateSchema.from_keys(keys)
    tool = skill_state_tool(schema)
    assert tool.description is not None
    assert schema.describe() in tool.description
    assert "null" in tool.description and "slug" in tool.description
    assert tool.parameters is not None
    assert tool.parameters["required"] == ["patch"]
    assert tool.parameters["properties"]["patch"]["type"] == "object"


def test_recall_offers_ref_offset_query_and_context() -> None:
    tool = recall_tool()
    assert tool.parameters is not None
    assert set(tool.parameters["properties"]) == {"ref", "offset", "query", "context"}
    assert tool.parameters["properties"]["context"]["maximum"] == MAX_RECALL_CONTEXT


@pytest.mark.parametrize("wire", list(Wire))
def test_the_tools_encode_on_every_wire(wire: Wire) -> None:
    tools = [skill_state_tool(StateSchema.from_keys(None)), recall_tool()]
    request = Request("m", [Message("user", [Text("hi")])], wire, tools=tools)
    body = json.dumps(adapter(wire).encode_request(request))
    assert SKILL_STATE_TOOL in body and RECALL_TOOL in body


@pytest.mark.parametrize(
    ("arguments", "patch"),
    [
        ('{"patch": {"step": 2}}', {"step": 2}),
        ('{"patch": {}}', {}),
        ('{"patch": "{\\"step\\": 2}"}', {"step": 2}),
        ('{"patch": {"findings": {"x": null}}}', {"findings": {"x": None}}),
    ],
)
def test_skill_state_calls(arguments: str, patch: dict[str, object]) -> None:
    assert parse_skill_state_call(arguments) == patch


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ("", "needs `patch`"),
        ("{}", "needs `patch`"),
        ('{"step": 2}', "remove `step`"),
        ('{"patch": {}, "why": "x"}', "remove `why`"),
        ('{"patch": [1]}', "must be a JSON object"),
        ('{"patch": "step=2"}', "must be a JSON object"),
        ('{"patch": "[1]"}', "must be a JSON object"),
        ('{"patch": null}', "must be a JSON object"),
        ('{"patch": ', "not valid JSON"),
        ("[1]", "must be a JSON object"),
    ],
)
def test_bad_skill_state_calls(arguments: str, says: str) -> None:
    result = parse_skill_state_call(arguments)
    assert isinstance(result, ToolCallError)
    assert says in result.reason


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"ref": "sha256:ab12"}', RecallByRef("sha256:ab12")),
        ('{"ref": " sha256:ab12\\n"}', RecallByRef("sha256:ab12")),
        ('{"ref": "sha256:ab12", "offset": 16000}', RecallByRef("sha256:ab12", 16000)),
        ('{"query": "port"}', RecallByQuery("port", DEFAULT_RECALL_CONTEXT)),
        ('{"query": "port", "context": 0}', RecallByQuery("port", 0)),
        (f'{{"query": "port", "context": {MAX_RECALL_CONTEXT}}}', RecallByQuery("port", 50)),
    ],
)
def test_recall_calls(arguments: str, expected: RecallByRef | RecallByQuery) -> None:
    assert parse_recall_call(arguments) == expected


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ("", "needs `ref`"),
        ('{"ref": "a", "query": "b"}', "not both"),
        ('{"ref": "a", "context": 2}', "not both"),
        ('{"ref": ""}', "non-empty"),
        ('{"ref": "a", "offset": -1}', "`offset` must be an integer"),
        ('{"ref": "a", "offset": "2"}', "`offset` must be an integer"),
        ('{"ref": "a", "offset": true}', "`offset` must be an integer"),
        ('{"ref": 12}', "non-empty string"),
        ('{"query": "  "}', "non-empty"),
        ('{"query": "a", "context": -1}', "from 0 to"),
        (f'{{"query": "a", "context": {MAX_RECALL_CONTEXT + 1}}}', "from 0 to"),
        ('{"query": "a", "context": true}', "integer"),
        ('{"query": "a", "context": 2.5}', "integer"),
        ('{"query": "a", "lines": 2}', "remove `lines`"),
        ('"port"', "must be a JSON object"),
        ("{", "not valid JSON"),
    ],
)
def test_bad_recall_calls(arguments: str, says: str) -> None:
    result = parse_recall_call(arguments)
    assert isinstance(result, ToolCallError)
    assert says in result.reason


def test_the_model_is_asked_to_write_the_state_alongside_a_real_call() -> None:
    from skillstate.state.schema import StateSchema
    from skillstate.state.tools import skill_state_tool

    description = skill_state_tool(StateSchema.from_keys(None)).description or ""
    assert "alongside your next real tool call, in the same turn" in description
