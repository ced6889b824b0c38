"""What a benchmark workload is: a seeded agent session, the scripted model that plays it, and
how its result is scored (../shared/BENCH.md; ``skillstate bench``).

The runner (``bench.run``) plays every workload the same way, on every arm: a client agent on
one wire keeps its transcript and sends it through the arm (the gateway in some mode, or the
provider directly); the simulated provider (``skillstate.testing.ScriptedUpstream`` with
``Billing``) answers with the workload's scripted model and bills the prompt cache. Each
request the model gets, it reads as it was sent (``testing.session_view.read_request``), so a
fact the arm lost is a fact the model does not have.

The loop, per step: the model answers with tool calls (the client runs them with
``Workload.execute`` and sends the results back) or with text (the step's answer). Before a
step the workload may add a user message (``instruction``): the task at step 0, a mid-task
instruction, a probe. The session ends when the model has answered the last step. A step is
one model reply, unless the workload says ``steps_end_with_text = True``: then a step lasts
through its tool rounds until the model answers in text (the warehouse: observe, then note).

The model finds where it is from the ids of its own calls (``call_id(step, k)``): the newest
result in a request tells the step, whatever the gateway collapsed before it. A model that
writes Σ does so through the ``skill_state`` tool when the request offers it (hybrid) or in
the envelope paper mode asks for (``testing.session_model.PaperModel`` shows how), according to
its ``Variant``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from skillstate.testing.policies import Policy


class Variant(StrEnum):
    """How the scripted model treats Σ."""

    CAREFUL = "careful"
    """Writes what it learned into Σ whenever it can."""
    CARELESS = "careless"
    """Never writes Σ."""
    FAULTY = "faulty"
    """Writes Σ, with the bad patches small open models write in the mix: whole-collection
    overwrites, wrong types, broken JSON."""
    PRUNING = "pruning"
    """Writes Σ, but keeps only what it noticed last: each patch deletes the findings noted
    before (a ``null`` for each), the premature deletion the SKILL.state paper finds most in
    small models' failures (the ``findings`` key's ``union`` rule keeps them anyway)."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the client offers: a name, a description and a JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call the model made: its id, name and parsed arguments."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Answer:
    """The model's text answer at ``step``."""

    step: int
    text: str


@dataclass(frozen=True, slots=True)
class Score:
    """How a run did. ``score`` and ``recall`` are in [0, 1]; ``sources`` says, per probed
    fact, where the model found it: ``context`` (verbatim in what it was sent), ``state`` (in
    Σ or a gateway note), ``recall`` (through a recall call), or ``lost``."""

    score: float
    recall: float
    sources: Mapping[str, str] = field(default_factory=dict)


class Workload(Protocol):
    """A seeded session. ``horizon`` is its number of steps."""

    name: str
    horizon: int
    seed: int
    system: str
    tools: Sequence[ToolSpec]

    def instruction(self, step: int) -> str | None:
        """The user message the client adds before ``step`` (the task at 0), or None."""
        ...

    def execute(self, call: Call) -> str:
        """The client's tool: the result text of ``call``."""
        ...

    def model(self, variant: Variant) -> Policy:
        """The scripted model playing this session (a ``ScriptedUpstream`` policy)."""
        ...

    def score(self, answers: Sequence[Answer]) -> Score:
        """The run's score from the model's text answers (the session's truth is the
        generator's, never the model's)."""
        ...


NOTES_HEADING = "Your notes so far (end your reply with them rewritten whole, under 'Notes:'):"
"""How a client that carries the model's own notes (the ``memory`` and ``stateful`` arms, the
paper's baselines) shows them, ahead of its step's instruction."""
_NOTES = re.compile(r"Notes:\n```json\n(.*?)\n```", re.S)


def notes_block(notes: str) -> str:
    """``notes`` (JSON text) as the model writes them and the client shows them."""
    return f"Notes:\n```json\n{notes}\n```"


def with_notes(notes: str, instruction: str) -> str:
    """The client's message for a step: the notes carried so far, then ``instruction``."""
    return f"{NOTES_HEADING}\n{notes_block(notes)}\n\n{instruction}"


def notes_of(text: str) -> str | None:
    """The newest notes block in ``text`` (its JSON text), or None."""
    found = _NOTES.findall(text)
    return found[-1] if found else None


_CALL_ID = re.compile(r"call_s(\d+)_(\d+)\Z")


def call_id(step: int, k: int = 0) -> str:
    """The id of the model's ``k``-th call at ``step``: where the model finds itself later."""
    return f"call_s{step:04d}_{k}"


def step_of(call: str) -> int | None:
    """The step a ``call_id`` was made at, or None for any other id."""
    found = _CALL_ID.search(call)
    return int(found.group(1)) if found else None
