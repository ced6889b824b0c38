"""``accumulation``: N files each hold a value; the final answer is their sum.

The client offers one tool, ``read_file``. Each file is 2–5 KB of log-like text with its value
buried in one line (``value of file-007: 4821``). The model reads one file a step (step ``k``
reads ``file-{k+1:03d}`` with ``call_id(k)``) and, after the last one, is asked for the sum.
It answers only from what the request it got holds: a value verbatim in a tool result, in Σ
(the gateway's Σ message or tail note, paper mode's Σ block), or in the answer to a ``recall``
it makes when values are missing and the request offers ``recall``. A careful model notes each
value it sees in Σ whenever the request lets it (``skill_state`` offered, or paper mode's
envelope); a careless one never does; a faulty one sends a bad patch every few steps.

Its answer lists every value it found and where, then the sum; the truth (the values) is held
by the workload, so ``score`` is 1 only when the sum is right, and ``recall`` is the share of
the values the model found.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillstate.bench.workload import Answer, Call, Score, ToolSpec, Variant, call_id, step_of
from skillstate.support import jsonio
from skillstate.testing.policies import Policy
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedCall
from skillstate.testing.session_view import NOTE_PREFIX, Seen, read_request, tool_names

DEFAULT_HORIZON = 31
"""30 files read, then the sum."""

NAME = "accumulation"
READ_FILE = "read_file"
SKILL_STATE = "skill_state"
RECALL = "recall"
MARKER = "value of file"
_VALUE = re.compile(r"value of (file-\d{3}): (\d+)")
_FOUND = re.compile(r"(file-\d{3})=(\d+) \((context|state|recall)\)")
_SUM = re.compile(r"The sum is (-?\d+)\.")
_STATE_HEADING = "State Σ:"
_WORDS = (
    "worker",
    "flushed",
    "batch",
    "queue",
    "shard",
    "replica",
    "index",
    "compacted",
    "segment",
    "retry",
    "lease",
    "renewed",
    "checkpoint",
    "cursor",
    "offset",
    "snapshot",
    "merged",
    "rotated",
    "heartbeat",
    "timer",
    "expired",
    "cache",
    "warmed",
    "request",
    "handled",
    "latency",
    "window",
    "sampled",
    "buffer",
    "drained",
)

SYSTEM = (
    "You add up numbers kept in files. Read each file with read_file, one at a time, and keep "
    "every value you find (a line `value of file-NNN: V`). When every file is read, answer "
    "with the sum of the values."
)


@dataclass(frozen=True, slots=True)
class Accumulation:
    """The seeded session: ``files`` file names (``horizon - 1`` of them), their values and
    texts."""

    horizon: int
    seed: int
    values: Mapping[str, int]
    texts: Mapping[str, str]
    name: str = NAME
    system: str = SYSTEM
    tools: Sequence[ToolSpec] = (
        ToolSpec(
            READ_FILE,
            "Read a file of the workspace and return its text.",
            {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "the file's name"}},
                "required": ["path"],
            },
        ),
    )

    @property
    def files(self) -> list[str]:
        return list(self.values)

    def instruction(self, step: int) -> str | None:
        if step == 0:
            listed = f"{self.files[0]} to {self.files[-1]}" if self.files else "no files"
            return (
                f"There are {len(self.files)} files, {listed}. Read them one by one and tell "
                "me the sum of their values."
            )
        if step == len(self.files):
            return "Every file is read. What is the sum of the values?"
        return None

    def execute(self, call: Call) -> str:
        path = str(call.arguments.get("path", ""))
        if call.name != READ_FILE or path not in self.texts:
            return f"error: no such file {path!r}"
        return self.texts[path]

    def model(self, variant: Variant) -> Policy:
        return AccumulationModel(self.files, variant)

    def score(self, answers: Sequence[Answer]) -> Score:
        final = answers[-1].text if answers else ""
        found = {name: (int(v), where) for name, v, where in _FOUND.findall(final)}
        right = {n: w for n, (v, w) in found.items() if self.values.get(n) == v}
        total = _SUM.search(final)
        truth = sum(self.values.values())
        score = 1.0 if total is not None and int(total.group(1)) == truth else 0.0
        sources = {name: right.get(name, "lost") for name in self.files}
        recall = len(right) / len(self.files) if self.files else 1.0
        return Score(score, recall, sources)


def build(horizon: int, seed: int) -> Accumulation:
    """``horizon - 1`` files (at least one), their values and texts from ``seed``."""
    rng = random.Random(f"{NAME}:{seed}")
    count = max(1, horizon - 1)
    values: dict[str, int] = {}
    texts: dict[str, str] = {}
    for n in range(1, count + 1):
        name = f"file-{n:03d}"
        values[name] = rng.randint(100, 9999)
        texts[name] = _text(rng, name, values[name])
    return Accumulation(count + 1, seed, values, texts)


def _text(rng: random.Random, name: str, value: int) -> str:
    """2–5 KB of log lines with the value's line somewhere among them."""
    target = rng.randint(2000, 5000)
    lines: list[str] = []
    size = 0
    while size < target:
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 12)))
        line = f"{rng.randint(0, 86399):05d} {name} {words} id={rng.getrandbits(32):08x}"
        lines.append(line)
        size += len(line) + 1
    lines.insert(rng.randrange(len(lines) + 1), f"{MARKER}-{name[5:]}: {value}")
    return "\n".join(lines)


@dataclass(slots=True)
class AccumulationModel:
    """The scripted model (see the module docstring): a ``ScriptedUpstream`` policy."""

    files: Sequence[str]
    variant: Variant = Variant.CAREFUL
    patches: int = field(default=0)

    def __call__(self, recorded: RecordedRequest) -> Reply:
        seen = read_request(recorded)
        offered = tool_names(recorded)
        paper = _paper_state(seen) is not None
        places = _places(seen)
        found = {name: (value, _where(where)) for name, (value, where) in places.items()}
        step = _done_step(seen) + 1
        if step < len(self.files):
            call = ScriptedCall(READ_FILE, {"path": self.files[step]}, id=call_id(step))
            patch = self._patch(places)
            if paper:
                envelope = {"state_patch": patch or {}, "action": f"read {self.files[step]}"}
                return Reply(text=self._envelope(envelope), calls=[call])
            if patch is not None and SKILL_STATE in offered:
                note = ScriptedCall(SKILL_STATE, {"patch": patch}, id=f"call_s{step:04d}_state")
                return Reply(calls=[note, call])
            return Reply(calls=[call])
        missing = [name for name in self.files if name not in found]
        asked = _recall_answered(seen)
        if missing and RECALL in offered and not asked:
            query = ScriptedCall(
                RECALL, {"query": MARKER, "context": 0}, id=f"call_s{step:04d}_recall"
            )
            return Reply(calls=[query])
        text = _answer(self.files, found)
        if paper:
            return Reply(text=jsonio.dumps_str({"state_patch": {}, "action": text}))
        return Reply(text=text)

    def _patch(self, places: Mapping[str, tuple[int, set[str]]]) -> dict[str, Any] | None:
        """The values seen but not yet in Σ, as a ``findings`` patch (None: nothing new, or a
        careless model)."""
        if self.variant is Variant.CARELESS:
            return None
        new = {n: f"{MARKER}-{n[5:]}: {v}" for n, (v, at) in places.items() if "state" not in at}
        if not new:
            return None
        self.patches += 1
        if self.variant is Variant.FAULTY and self.patches % 3 == 0:
            return {"findings": list(new.values())}  # a wrong type: an array, not an object
        return {"findings": new}

    def _envelope(self, envelope: Mapping[str, Any]) -> str:
        if self.variant is Variant.FAULTY and self.patches % 5 == 4:
            return jsonio.dumps_str(envelope)[:-2]  # broken JSON
        return jsonio.dumps_str(envelope)


def _answer(files: Sequence[str], found: Mapping[str, tuple[int, str]]) -> str:
    listed = ", ".join(f"{n}={found[n][0]} ({found[n][1]})" for n in files if n in found)
    total = sum(found[n][0] for n in files if n in found)
    return f"Found {len(found)} of {len(files)} values: {listed or 'none'}. The sum is {total}."


def _paper_state(seen: Sequence[Seen]) -> str | None:
    for message in seen:
        for text in message.texts:
            if _STATE_HEADING in text:
                return text
    return None


def _done_step(seen: Sequence[Seen]) -> int:
    """The newest step whose ``read_file`` result the request holds (-1: none)."""
    done = -1
    for message in seen:
        for call, _ in message.results:
            step = step_of(call)
            if step is not None:
                done = max(done, step)
    return done


def _recall_answered(seen: Sequence[Seen]) -> bool:
    return any(call.endswith("_recall") for m in seen for call, _ in m.results)


def _found(seen: Sequence[Seen]) -> dict[str, tuple[int, str]]:
    """Every value the request holds and where the answer says it was: ``context`` when it is
    verbatim in the conversation, else ``state`` (a gateway note, paper mode's Σ block), else
    ``recall`` (a recall answer)."""
    return {name: (value, _where(places)) for name, (value, places) in _places(seen).items()}


def _where(places: set[str]) -> str:
    return next(where for where in ("context", "state", "recall") if where in places)


def _places(seen: Sequence[Seen]) -> dict[str, tuple[int, set[str]]]:
    """Every value the request holds, with each kind of place it was found in."""
    found: dict[str, tuple[int, set[str]]] = {}

    def note(text: str, where: str) -> None:
        for name, value in _VALUE.findall(text):
            found.setdefault(name, (int(value), set()))[1].add(where)

    for message in seen:
        for text in message.texts:
            if text.startswith(NOTE_PREFIX):
                note(text, "state")
            elif _STATE_HEADING in text:
                head, _, state = text.partition(_STATE_HEADING)
                note(head, "context")
                note(state, "state")
            else:
                note(text, "context")
        for call, output in message.results:
            note(output, "recall" if call.endswith("_recall") else "context")
    return found
