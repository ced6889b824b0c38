"""The handover round's request and the reading of its reply (``state.handover``)."""

from __future__ import annotations

import dataclasses

import pytest

from skillstate.conversation import Message, OutputFormat, Request, Text, Tool, ToolChoice, Wire
from skillstate.conversation.model import Params
from skillstate.state.envelope import EnvelopeError, parse_json_object
from skillstate.state.handover import (
    HANDOVER_HEADING,
    can_hand_over,
    handover_request,
    own_settings,
    patch_tokens,
)
from skillstate.state.schema import Bounds, StateSchema
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
    assert (handover.system, handover.tools, handover.extra) == (
        request.system,
        request.tools,
        request.extra,
    )
    assert handover.params == own_settings(request.params, patch_tokens(SCHEMA.bounds))
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


def test_the_handover_is_sent_with_its_own_settings_not_the_clients() -> None:
    """Defect 8 of issue 25: a client's ``max_tokens: 40``, stream and tool choice were
    copied, and 40 tokens cannot hold a patch."""
    client = Params(
        max_tokens=40,
        temperature=0.2,
        top_p=0.9,
        stop=["\n\n"],
        stream=True,
        tool_choice=ToolChoice("auto"),
        parallel_tool_calls=False,
        effort="low",
        output_format=OutputFormat("json_schema", {"type": "object"}, "answer"),
        logprobs=3,
    )
    request = dataclasses.replace(_request(), params=client)
    sent = handover_request(request, {}, SCHEMA).params
    assert sent.stream is False
    assert sent.max_tokens == patch_tokens(SCHEMA.bounds) == 8192
    assert sent.tool_choice == ToolChoice("auto")  # forces nothing; a change would cost the cache
    assert (sent.stop, sent.output_format, sent.logprobs, sent.candidates) == (None,) * 4
    # What the model takes as it is stays the client's.
    assert (sent.temperature, sent.top_p, sent.effort, sent.parallel_tool_calls) == (
        0.2,
        0.9,
        "low",
        False,
    )


def test_the_patch_limit_follows_the_patch_bound() -> None:
    assert patch_tokens(Bounds(max_patch_bytes=16 * 1024)) == 8192
    assert patch_tokens(Bounds(max_patch_bytes=64 * 1024, max_state_bytes=64 * 1024)) == 32768
    assert patch_tokens(Bounds(max_patch_bytes=1001)) == 501


def test_a_thinking_budget_is_added_to_the_rounds_output_limit() -> None:
    """Anthropic counts thinking inside ``max_tokens`` and refuses one below the budget."""
    sent = own_settings(Params(max_tokens=64_000, thinking_budget=10_000), 8192)
    assert (sent.max_tokens, sent.thinking_budget) == (18_192, 10_000)


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        (None, None),
        (ToolChoice("auto"), ToolChoice("auto")),
        (ToolChoice("none"), ToolChoice("none")),
        (ToolChoice("required"), None),
        (ToolChoice("tool", "shell"), None),
    ],
)
def test_a_tool_choice_that_forces_a_call_is_dropped(
    choice: ToolChoice | None, sent: ToolChoice | None
) -> None:
    """The round asks for text; a choice that forces nothing stays as the client sent it."""
    assert own_settings(Params(tool_choice=choice), 10).tool_choice == sent
