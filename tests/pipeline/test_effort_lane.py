"""Effort routing: an effort picked from the task where the caller chose none, for models that
take one, on the OpenAI wires only; the caller's own choice always wins."""

from __future__ import annotations

import pytest

from skillstate.conversation import Message, Params, Request, Text, ToolCall, ToolResult, Wire
from skillstate.economics.prices import PricesError, builtin_catalog, parse_catalog
from skillstate.pipeline.effort_lane import EFFORT_KEY, EffortLane, pick_effort
from skillstate.pipeline.lane import LaneContext
from skillstate.state.mode import Mode


def asked(text: str, steps: int = 0) -> list[Message]:
    messages = [Message("user", [Text(text)])]
    for n in range(steps):
        messages.append(Message("assistant", [ToolCall(f"c{n}", "shell", "{}")]))
        messages.append(Message("tool", [ToolResult(f"c{n}", [Text("ok")])]))
    return messages


@pytest.mark.parametrize(
    ("text", "steps", "effort"),
    [
        ("Rename the helper to parse_row.", 0, "low"),
        ("List the files in src.", 3, "low"),
        ("List the files in src.", 30, "medium"),  # a loop that went deep is no quick task
        ("Add a test for the parser.", 0, "medium"),
        ("Debug why the worker hangs on shutdown.", 0, "high"),
        ("Refactor the payments module.", 5, "high"),
        ("Do this: " + "step by step, " * 200, 0, "high"),  # a long instruction
    ],
)
def test_the_effort_follows_the_task(text: str, steps: int, effort: str) -> None:
    assert pick_effort(asked(text, steps)) == effort


def context(upstream: Wire = Wire.CHAT, **extra: str) -> LaneContext:
    return LaneContext("s", Wire.CHAT, upstream, Mode.OFF, extra=extra)


def request(model: str = "gpt-5", **params: object) -> Request:
    return Request(model, asked("Debug the crash."), Wire.CHAT, params=Params(**params))  # type: ignore[arg-type]


async def test_an_effort_is_set_for_a_model_that_takes_one() -> None:
    outcome = await EffortLane(builtin_catalog())(request(), context())
    assert outcome.request.params.effort == "high" and outcome.summary == "high"
    assert outcome.report == {"effort": "high", "by": "task"}


async def test_the_header_chooses_and_off_leaves_it_unset() -> None:
    lane = EffortLane(builtin_catalog())
    chosen = await lane(request(), context(**{EFFORT_KEY: "low"}))
    assert chosen.request.params.effort == "low" and chosen.report["by"] == "header"
    sent = request()
    assert (await lane(sent, context(**{EFFORT_KEY: "off"}))).request is sent


@pytest.mark.parametrize(
    ("sent", "upstream"),
    [
        (request(effort="minimal"), Wire.CHAT),  # the caller's own effort wins
        (request(thinking_budget=2048), Wire.RESPONSES),  # so does its thinking budget
        (request("gpt-4.1"), Wire.CHAT),  # takes no effort
        (request("claude-sonnet-4-5"), Wire.MESSAGES),  # thinking is not turned on mid-loop
        (request(), Wire.MESSAGES),
    ],
    ids=["caller-effort", "caller-budget", "no-effort-model", "anthropic", "messages-upstream"],
)
async def test_requests_it_must_leave_alone(sent: Request, upstream: Wire) -> None:
    outcome = await EffortLane(builtin_catalog())(sent, context(upstream))
    assert outcome.request is sent


def test_the_catalog_names_the_models_that_take_an_effort() -> None:
    catalog = builtin_catalog()
    assert catalog.accepts_effort("gpt-5") and catalog.accepts_effort("openai/o3-mini")
    assert catalog.accepts_effort("gpt-5-2025-08-07")  # a snapshot of a listed model
    assert not catalog.accepts_effort("gpt-4.1") and not catalog.accepts_effort("unknown")
    text = (  # the parser's checks, on a catalog of one model
        'as_of = 2025-01-01\n[providers.p]\nsource = "https://example.test"\n'
        '[models.m]\nprovider = "p"\ninput = 1\ncached_input = 1\noutput = 1\n'
    )
    assert parse_catalog(text + '[effort]\nmodels = ["m"]\n').accepts_effort("m")
    with pytest.raises(PricesError, match="no \\[models\\] table lists"):
        parse_catalog(text + '[effort]\nmodels = ["other"]\n')
