"""The effort routing lane (``effort``): a reasoning effort for a request whose caller chose
none, picked from the task.

``pick_effort`` reads the newest user instruction and the tool loop under it: ``high`` for an
instruction that asks for diagnosis, design or proof (``debug``, ``refactor``, ``why``, ...) or
runs long; ``low`` for a short one that asks for something mechanical (``rename``, ``list``,
``format``, ...) before its tool loop has gone deep; ``medium`` otherwise. The same instruction
gives the same effort on every step of its loop. ``x-skillstate-effort: low|medium|high``
chooses it for one request, ``off`` leaves it unset.

Applied only where it is safe and meant: the caller's own effort or thinking budget always
wins (the request is left as it came); only for models the catalog says take an effort
(``[effort] models`` in ``prices.toml``), and only upstream on the OpenAI wires, where the
effort is one parameter (Chat's ``reasoning_effort``, Responses' ``reasoning.effort``).
Anthropic's extended thinking is not turned on here: once on, every assistant turn of a tool
loop must begin with its thinking block, which a history written without it does not have.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from skillstate.conversation import Message, Request, Wire
from skillstate.economics.prices import Catalog
from skillstate.pipeline.lane import LaneContext, LaneOutcome
from skillstate.pipeline.surface import LaneHeader, LaneSpec
from skillstate.state.paper import is_results, newest_instruction

EFFORTS = ("low", "medium", "high")
EFFORT_KEY = "effort"
"""The lane's name, and so ``LaneContext.extra``'s key for the effort a request asked for
(``x-skillstate-effort``: one of ``EFFORTS`` or ``off``)."""

HIGH = frozenset(
    {
        "debug", "diagnose", "investigate", "why", "refactor", "redesign", "design",
        "architecture", "prove", "proof", "optimize", "optimise", "security", "vulnerability",
        "race", "deadlock", "migrate", "concurrency", "performance", "plan", "cause",
    }
)  # fmt: skip
LOW = frozenset(
    {"rename", "format", "list", "show", "print", "typo", "run", "echo", "count", "lint", "sort"}
)
LONG_CHARS = 1_500
SHORT_CHARS = 300
DEEP_LOOP = 12
"""Tool results under one instruction past which it is not treated as a quick task."""

_WORD = re.compile(r"[a-z]+")


def pick_effort(messages: Sequence[Message]) -> str:
    """The effort the newest instruction of ``messages`` calls for (see the module)."""
    instruction = newest_instruction(messages) or ""
    words = set(_WORD.findall(instruction.lower()))
    if words & HIGH or len(instruction) > LONG_CHARS:
        return "high"
    if words & LOW and len(instruction) < SHORT_CHARS and _loop_depth(messages) < DEEP_LOOP:
        return "low"
    return "medium"


def _loop_depth(messages: Sequence[Message]) -> int:
    """Tool-result messages after the newest instruction."""
    depth = 0
    for message in reversed(messages):
        if message.role == "user" and not is_results(message):
            break
        depth += is_results(message) or message.role == "tool"
    return depth


class EffortLane:
    name = EFFORT_KEY

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        params = request.params
        if params.effort is not None or params.thinking_budget is not None:
            return LaneOutcome(request)  # the caller's choice wins
        if context.upstream_wire is Wire.MESSAGES or not self.catalog.accepts_effort(request.model):
            return LaneOutcome(request)
        asked = context.extra.get(EFFORT_KEY)
        effort = str(asked) if asked is not None else pick_effort(request.messages)
        if effort not in EFFORTS:
            return LaneOutcome(request)  # "off"
        chosen = dataclasses.replace(request, params=dataclasses.replace(params, effort=effort))
        report = {"effort": effort, "by": "header" if asked is not None else "task"}
        return LaneOutcome(chosen, report=report, summary=effort)


LANE = LaneSpec(
    name=EFFORT_KEY,
    build=lambda parts, options: EffortLane(parts.catalog),
    header=LaneHeader("x-skillstate-effort", (*EFFORTS, "off")),
)
"""Off unless switched on: the benchmark's scripted model does not reason, so it cannot show
what an effort saves or costs (docs/lanes.md)."""
