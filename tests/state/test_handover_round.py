"""The handover round's request and the reading of its reply (``state.handover``)."""

from __future__ import annotations

import pytest

from skillstate.conversation import Message, Request, Text, Tool, ToolChoice, Wire
from skillstate.conversation.model import Params
from skillstate.state.envelope import EnvelopeError, parse_json_object
from skillstate.state.handover import (
    HANDOVER_HEADING,
    can_hand_over,
    handover_request,
)
from skillstate.state.schema import StateSchema
from skillstate.testing.session_view import HANDOVER_HEADING as SEEN_HEADING

SCHEMA = StateSchema.from_keys(None)


def _request(choice: ToolChoice | None = None, stream: bool = True) -> Request:
    return Request(
        source=Wire.MESSAGES,
        model="m",
        system=[Text("You fix bugs.")],
        messages=[Message("user", [Text("Fix the parser.")])],
        tools=[Tool("shell", "Run a command.", {"type": "object"})],
        params=Params(stream=stream, tool_choice=choice),
    )


def test_the_handover_is_the_clients_request_with_one_user_message_more() -> None:
    request = _request()
    handover = handover_request(request, {"objective": "fix the parser"}, SCHEMA)
    assert handover.messages[:-1] == request.messages
    assert (handover.system, handover.tools, handover.params) == (
        request.system,
        request.tools,
        request.params,
    )
    (last,) = handover.messages[-1:]
    assert last.role == "user"
    [text] = [p.text for p in last.parts if isinstance(p, Text)]
    assert text.startswith(HANDOVER_HEADING)
    assert '"objective":"fix the parser"' in text.replace(": ", ":")
    assert "- findings:" in text  # Σ's keys, as the model is told them elsewhere
    assert SEEN_HEADING == HANDOVER_HEADING  # what the scripted models look for


@pytest.mark.parametrize(
    ("choice", "can"),
    [
        (None, True),
        (ToolChoice("auto"), True),
        (ToolChoice("none"), True),
        (ToolChoice("required"), False),
        (ToolChoice("tool", "shell"), False),
    ],
)
def test_a_client_forcing_a_tool_call_gets_no_handover(
    choice: ToolChoice | None, can: bool
) -> None:
    assert can_hand_over(_request(choice)) is can


@pytest.mark.parametrize(
    ("text", "patch"),
    [
        ('{"findings": {"a": "b"}}', {"findings": {"a": "b"}}),
        ('Here it is:\n```json\n{"step": 3}\n```\n', {"step": 3}),
        ("{}", {}),
    ],
)
def test_the_patch_is_the_reply_or_its_last_json_block(text: str, patch: object) -> None:
    assert parse_json_object(text) == patch


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("I will read the tests next.", "no_json"),
        ("[1, 2]", "not_object"),
        ("```json\n{\n```", "invalid_json"),
    ],
)
def test_a_reply_without_one_object_is_no_patch(text: str, code: str) -> None:
    found = parse_json_object(text)
    assert isinstance(found, EnvelopeError) and found.code == code
