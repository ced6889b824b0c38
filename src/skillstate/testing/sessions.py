"""Long scripted agent sessions: a fake repository, the plan of a coding task over it, and the
loop that plays the session through a gateway.

What a real coding agent's traffic looks like, without the agent: the scripted model
(``session_model.CodingModel``) follows a ``SessionPlan`` step by step, the client loop
(``session_clients``) keeps the whole transcript and sends it on every turn, and the tools it
"runs" answer from a ``Workspace`` of generated files (5 to 50 KB each). The plan puts in the
things long sessions are made of: single and parallel tool calls, test runs that fail, edits,
Σ patches (some alone, which makes the gateway run an internal round), a user instruction in
the middle of the task, and a fact seen once early (``SessionPlan.fact``) that the user asks
about much later (``SessionPlan.probe``).

Everything is derived from ``seed``: two runs of one plan send byte-identical requests.

The pieces: this module (plan, workspace), ``session_tools`` (each host's tools: Codex,
Claude Code, a plain loop), ``session_view`` (a request as the model reads it),
``session_model`` (the scripted models), ``session_clients`` (the client loops and
``run_session``), ``session_checks`` (reading what went upstream: epochs, prefixes, pairs).

Turns and steps: turn ``t`` is the client's ``t``-th request; the model's answer to it is step
``t`` of the plan (its tool calls, whose results the client sends in turn ``t + 1``). The last
step answers with a final text and no call.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from skillstate.conversation import Json

Action = Literal["read", "test", "edit", "grep"]

#: The words the generated sources are made of; none of them is part of the fact's phrase.
_WORDS = (
    "value", "config", "parse", "result", "index", "token", "buffer", "client", "request",
    "session", "state", "cache", "limit", "window", "record", "schema", "merge", "patch",
    "epoch", "archive", "entry", "offset", "stream", "event", "handler", "report", "budget",
)  # fmt: skip

FACT_PHRASE = "release key"
"""How the fact's line reads (``# release key: rk-1234-5678``); no other file holds it."""

MIN_FILE_BYTES = 5_000
MAX_FILE_BYTES = 50_000


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One call of the client's own tools: read a file, run its tests, edit it, or grep."""

    action: Action
    path: str


@dataclass(frozen=True, slots=True)
class Step:
    """The model's answer at one step: ``uses`` run in parallel (one call each); ``patch`` is
    a Σ patch sent with them through ``skill_state`` (first, on its own, when
    ``patch_alone``); ``reasoning`` is a thinking summary sent with the answer."""

    number: int
    uses: tuple[ToolUse, ...]
    patch: Json | None = None
    patch_alone: bool = False
    reasoning: str | None = None


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """A whole session: ``steps[i]`` is step ``i + 1``; see the module docstring.

    ``instructions`` maps a turn to a user instruction the client adds before that turn's
    request (the probe is one of them, at ``probe_turn``); ``system_notes`` maps a turn to a
    system message the client adds there (Claude Code sends some mid-conversation). With
    ``note_fact`` the model writes the fact into Σ when it first sees it."""

    task: str
    steps: tuple[Step, ...]
    fact_path: str
    fact: str
    fact_step: int
    probe_turn: int
    probe: str
    instructions: Mapping[int, str] = field(default_factory=dict)
    system_notes: Mapping[int, str] = field(default_factory=dict)
    note_fact: bool = False

    @property
    def turns(self) -> int:
        return len(self.steps) + 1

    def step(self, number: int) -> Step | None:
        """Step ``number`` (1-based); ``None`` for the final answer and past it."""
        return self.steps[number - 1] if 1 <= number <= len(self.steps) else None


class Workspace:
    """The generated repository the client's tools read: ``text(path)`` is a file's content,
    the same for a path and seed on every call and every run; the file of ``plan``'s fact (if
    a plan is given) holds the fact."""

    def __init__(self, plan: SessionPlan | None, seed: int) -> None:
        self.plan = plan
        self.seed = seed
        self._cache: dict[str, str] = {}

    def text(self, path: str) -> str:
        if path not in self._cache:
            rng = random.Random(f"{self.seed}:{path}")
            if self.plan is not None and path == self.plan.fact_path:
                self._cache[path] = _fact_file(rng, self.plan.fact)
            else:
                self._cache[path] = source_text(path, file_size(rng), rng)
        return self._cache[path]


def file_size(rng: random.Random) -> int:
    """A file size from 5 to 50 KB, log-uniform (most files are small, a few are big)."""
    low, high = math.log(MIN_FILE_BYTES), math.log(MAX_FILE_BYTES)
    return int(math.exp(rng.uniform(low, high)))


def source_text(path: str, size: int, rng: random.Random) -> str:
    """About ``size`` bytes of Python-looking source for ``path``."""
    lines = [f'"""{path}: part of the scripted repository."""', "", "import math", ""]
    total = sum(len(line) + 1 for line in lines)
    number = 0
    while total < size:
        a, b, w = rng.choice(_WORDS), rng.choice(_WORDS), rng.choice(_WORDS)
        k = rng.randrange(2, 97)
        block = [
            f"def {a}_{b}_{number}({a}, {b}):",
            f'    """The {w} of {a} and {b}, scaled by {k}."""',
            f"    {w} = {a} * {k} + {b}",
            f"    if {w} > {rng.randrange(100, 9999)}:",
            f"        return math.floor({w} / {k})",
            f"    return {w}",
            "",
        ]
        lines.extend(block)
        total += sum(len(line) + 1 for line in block)
        number += 1
    return "\n".join(lines) + "\n"


def _fact_file(rng: random.Random, fact: str) -> str:
    lines = ["# Deployment settings of the scripted repository.", ""]
    for i in range(120):
        lines.append(f"[{rng.choice(_WORDS)}_{i}]")
        lines.append(f"{rng.choice(_WORDS)} = {rng.randrange(1, 10_000)}")
        lines.append(f'{rng.choice(_WORDS)} = "{rng.choice(_WORDS)}-{rng.randrange(100)}"')
        if i == 61:
            lines.append(f"# {FACT_PHRASE}: {fact}")
        lines.append("")
    return "\n".join(lines) + "\n"


def coding_plan(
    turns: int = 150,
    *,
    seed: int = 0,
    fact_step: int = 5,
    probe_turn: int = 140,
    instruction_turn: int = 60,
    system_turn: int | None = None,
    note_fact: bool = False,
    patch_every: int = 10,
    alone_every: int = 30,
    files: int = 60,
) -> SessionPlan:
    """A coding task of ``turns`` turns over a repository of ``files`` generated modules.

    Step ``fact_step`` reads the file holding the fact; the user asks about it at
    ``probe_turn``, after giving a new instruction at ``instruction_turn``. Every
    ``patch_every`` steps the model patches Σ (``step``, a ``findings`` entry), on its own
    every ``alone_every`` steps; the first step sets the objective and plan."""
    if not 1 <= fact_step < probe_turn < turns:
        raise ValueError("expected 1 <= fact_step < probe_turn < turns")
    rng = random.Random(f"plan:{seed}")
    paths = [f"src/pkg/{rng.choice(_WORDS)}_{i:02d}.py" for i in range(files)]
    fact = f"rk-{rng.randrange(1000, 10_000)}-{rng.randrange(1000, 10_000)}"
    fact_path = "config/release.toml"
    steps = [
        _step(n, rng, paths, fact_path if n == fact_step else None, patch_every, alone_every)
        for n in range(1, turns)
    ]
    instructions = {instruction_turn: "Also keep the public function names unchanged."}
    probe = f"Quick question before you go on: what is the {FACT_PHRASE} in {fact_path}?"
    instructions[probe_turn] = probe
    notes = {} if system_turn is None else {system_turn: "The user switched to accept-edits."}
    return SessionPlan(
        task="Make the test suite of the scripted repository pass without changing behaviour.",
        steps=tuple(steps),
        fact_path=fact_path,
        fact=fact,
        fact_step=fact_step,
        probe_turn=probe_turn,
        probe=probe,
        instructions=instructions,
        system_notes=notes,
        note_fact=note_fact,
    )


def _step(
    n: int,
    rng: random.Random,
    paths: list[str],
    fact_path: str | None,
    patch_every: int,
    alone_every: int,
) -> Step:
    roll = rng.random()
    uses: tuple[ToolUse, ...]
    if fact_path is not None:
        uses = (ToolUse("read", fact_path),)
    elif roll < 0.25:
        uses = (ToolUse("read", rng.choice(paths)),)
    elif roll < 0.32:
        uses = tuple(ToolUse("read", p) for p in rng.sample(paths, 2))
    elif roll < 0.67:
        uses = (ToolUse("test", rng.choice(paths)),)
    elif roll < 0.85:
        uses = (ToolUse("test", rng.choice(paths)), ToolUse("grep", rng.choice(_WORDS)))
    else:
        uses = (ToolUse("edit", rng.choice(paths)),)
    patch: Json | None = None
    if n == 1:
        patch = {
            "objective": "make the tests pass without changing behaviour",
            "plan": {"survey": {"step": "read the failing modules", "status": "active"}},
            "step": 1,
        }
    elif n % patch_every == 0:
        patch = {"step": n, "findings": {f"s{n:03d}": f"step {n}: {uses[0].path} checked"}}
    reasoning = f"Step {n}: next I {uses[0].action} {uses[0].path}." if n % 3 == 0 else None
    alone = patch is not None and n % alone_every == 0
    return Step(n, uses, patch, alone, reasoning)
