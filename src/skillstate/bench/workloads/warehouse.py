"""The warehouse workload: the SKILL.state paper's environment, seeded.

A 500-shelf warehouse (shelves ``S001`` to ``S500``, 30 items such as ``gear-2``) starts
empty. Each step one event happens: **Store** ``qty`` of an item on a shelf, **Ship** ``qty``
from a shelf, **Move** ``qty`` from shelf A to shelf B, or **Wait** (nothing happens). At a few
steps, and always at the last, the user asks about the inventory as it stands after that
step's event: how many units of an item are on a shelf, which shelf holds the most of an item,
or how many units of an item the warehouse holds in all. The truth is the generator's.

The session, step by step (``horizon`` steps, numbered 0 to ``horizon - 1``)
---------------------------------------------------------------------------

1. Before every step the client adds ``instruction(step)``, a user message that is never None:
   ``Step s/h: call observe ...`` and, at a question step, ``then answer: <question>``.
2. The model calls ``observe`` (no arguments) with the id ``call_id(s)``; the client's
   ``execute`` returns the step's event, ``[step s] Store 14 gear-2 on shelf S045``, followed,
   with ``noise=N``, by ``N`` irrelevant lines under a ``Telemetry (ignore):`` header (in the
   paper's layout, in the step's message under ``--- BACKGROUND TELEMETRY ---``). The
   newest observe result in a request therefore tells the model its step.
3. The model replies with text, the step's ``Answer``: ``Noted step s.``, or at a question
   step ``Answer: <value> [source: context|state]``, where the source says whether the model
   needed Σ to answer. In paper mode that text is the action of the envelope
   ``{"state_patch": ..., "action": "Answer: ..."}``; ``score`` finds it anywhere in the text.

Σ, in the schema of ``SETTINGS`` (the setting a user would give the gateway for this task;
the bench applies it): ``findings`` maps a non-empty shelf to its contents
(``{"S045": "bolt-1=2, gear-2=14"}``; an emptied shelf is deleted with null) and
``done.events`` says how far Σ goes (``"through step 12"``). Patches touch only the shelves
that changed, so they stay small and merge key by key; Σ holds only non-empty shelves, well
under the 64 KiB bound at horizon 200. The scripted model (``warehouse_model``) answers from
Σ plus every event the request shows after Σ's step.

Drift (``drift=True``): now and then, after a step's event, an outside actor moves every unit
of one item off its shelf onto another, with no event. Nothing tells the model; the only sign
is later, when a Ship or Move of the goods from where they now are drives a count the model
keeps negative. Questions are scored against the truth, so drift costs every arm alike; the
``book`` (what the events alone imply) is kept beside it for ``recall``.

Scoring: ``score`` is the share of questions answered as the truth has it; ``recall`` the share
answered as the events imply (it equals ``score`` without drift): whether the model still had
every event's effect when asked. ``sources`` maps each question (``q<step>``) to the model's
stated source when its answer matched the book, else ``lost``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from skillstate.bench.workload import Answer, Call, Score, ToolSpec, Variant, step_of
from skillstate.testing.policies import Policy

DEFAULT_HORIZON = 50
SHELVES = tuple(f"S{n:03d}" for n in range(1, 501))
_NOUNS = (
    "bolt",
    "gear",
    "valve",
    "spring",
    "hinge",
    "pulley",
    "washer",
    "rivet",
    "flange",
    "bracket",
)
ITEMS = tuple(f"{noun}-{size}" for noun in _NOUNS for size in (1, 2, 3))
OBSERVE = "observe"
DRIFT_CHANCE = 0.06
"""The chance, per step, that the outside actor moves something silently."""
TELEMETRY_HEADER = "Telemetry (ignore):"
PAPER_TELEMETRY_HEADER = "--- BACKGROUND TELEMETRY ---"
"""The header the paper's environment puts its noise lines under (the paper's layout)."""

SYSTEM = f"""You keep the books of a {len(SHELVES)}-shelf warehouse (shelves S001 to S500).
Each user message starts a step: "Step s/h: ...". For every step, call `observe` once (no \
arguments): it returns that step's event, one of
  [step s] Store Q ITEM on shelf S
  [step s] Ship Q ITEM from shelf S
  [step s] Move Q ITEM from shelf A to shelf B
  [step s] Wait: nothing happens
possibly followed by telemetry lines, which do not matter. Then reply with text: "Noted step s." \
or, when the step asks a question, "Answer: <value> [source: context|state]" (state: you needed \
the session state to answer). Questions are about the inventory after that step's event.
If you can update the session state, keep the inventory in it: `findings` maps each non-empty \
shelf to its contents ("bolt-1=2, gear-2=14", items sorted; null deletes an emptied shelf) and \
`done.events` says "through step s". Send only the shelves that changed."""

INLINE_SYSTEM = f"""You keep the books of a {len(SHELVES)}-shelf warehouse (shelves S001 to S500).
Each user message is a step, "Step s/h: [step s] EVENT", the event one of: Store Q ITEM on \
shelf S; Ship Q ITEM from shelf S; Move Q ITEM from shelf A to shelf B; Wait: nothing happens. \
Reply "Noted step s." or, when the step asks about the inventory after its event, \
"Answer: <value> [source: context|state]" (state: you needed the session state). If you keep \
a state, keep the inventory in it: `findings` maps each non-empty shelf to its contents \
("bolt-1=2, gear-2=14", items sorted; null deletes an emptied shelf), `done.events` says \
"through step s"."""
"""The system prompt of the paper's layout (``build(..., paper_layout=True)``): the event in
the step's message, no tool."""
MAX_LOTS = 8
"""The paper's layout keeps at most this many (shelf, item) lots in the warehouse: a Store that
would add a lot past it ships one instead (``_lot_event``)."""

SETTINGS: Mapping[str, object] = {"schema": ["findings:replace", "done"]}
"""Σ as the task needs it: the inventory in ``findings``, replaced shelf by shelf (null deletes
an emptied one, which the default schema's ``union`` would refuse), and ``done.events``."""

_PARAMETERS: Mapping[str, object] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}
TOOLS = (ToolSpec(OBSERVE, "Observe this step's warehouse event.", _PARAMETERS),)


class Kind(StrEnum):
    STORE = "Store"
    SHIP = "Ship"
    MOVE = "Move"
    WAIT = "Wait"


@dataclass(frozen=True, slots=True)
class Event:
    """One step's event; ``item``, ``qty`` and ``shelf`` are empty for a Wait, ``to`` is set
    for a Move only."""

    step: int
    kind: Kind
    item: str = ""
    qty: int = 0
    shelf: str = ""
    to: str = ""

    def text(self) -> str:
        head = f"[step {self.step}] {self.kind}"
        if self.kind is Kind.WAIT:
            return f"{head}: nothing happens"
        if self.kind is Kind.STORE:
            return f"{head} {self.qty} {self.item} on shelf {self.shelf}"
        if self.kind is Kind.SHIP:
            return f"{head} {self.qty} {self.item} from shelf {self.shelf}"
        return f"{head} {self.qty} {self.item} from shelf {self.shelf} to shelf {self.to}"


_EVENT = re.compile(
    r"\[step (\d+)\] (?:(Wait): nothing happens|(Store|Ship|Move) (-?\d+) (\S+) "
    r"(?:on|from) shelf (S\d{3})(?: to shelf (S\d{3}))?)"
)


def parse_event(text: str) -> Event | None:
    """The event an ``execute`` result (or any text) starts with, or None."""
    found = _EVENT.search(text)
    if found is None:
        return None
    step = int(found.group(1))
    if found.group(2):
        return Event(step, Kind.WAIT)
    kind = Kind(found.group(3))
    return Event(
        step, kind, found.group(5), int(found.group(4)), found.group(6), found.group(7) or ""
    )


@dataclass(slots=True)
class Inventory:
    """Shelf -> item -> units. Counts may go negative in a book that missed a drift."""

    cells: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, shelf: str, item: str, qty: int) -> None:
        held = self.cells.setdefault(shelf, {})
        held[item] = held.get(item, 0) + qty
        if held[item] == 0:
            del held[item]
        if not held:
            del self.cells[shelf]

    def apply(self, event: Event) -> None:
        if event.kind is Kind.STORE:
            self.add(event.shelf, event.item, event.qty)
        elif event.kind is Kind.SHIP:
            self.add(event.shelf, event.item, -event.qty)
        elif event.kind is Kind.MOVE:
            self.add(event.shelf, event.item, -event.qty)
            self.add(event.to, event.item, event.qty)

    def qty(self, shelf: str, item: str) -> int:
        return self.cells.get(shelf, {}).get(item, 0)

    def total(self, item: str) -> int:
        return sum(held.get(item, 0) for held in self.cells.values())

    def most(self, item: str) -> str:
        """The shelf holding the most ``item`` (the lowest-numbered on a tie), or ``none``."""
        best = max((held.get(item, 0) for held in self.cells.values()), default=0)
        if best <= 0:
            return "none"
        return min(s for s, held in self.cells.items() if held.get(item, 0) == best)

    def copy(self) -> Inventory:
        return Inventory({shelf: dict(held) for shelf, held in self.cells.items()})

    def findings(self) -> dict[str, str]:
        """Σ's ``findings``: each non-empty shelf's contents, items sorted."""
        return {shelf: shelf_text(held) for shelf, held in sorted(self.cells.items())}


def shelf_text(held: Mapping[str, int]) -> str:
    return ", ".join(f"{item}={qty}" for item, qty in sorted(held.items()))


def parse_shelf(text: str) -> dict[str, int]:
    """``shelf_text`` read back; an entry that does not parse is skipped."""
    held: dict[str, int] = {}
    for piece in text.split(","):
        item, _, qty = piece.strip().partition("=")
        if item and re.fullmatch(r"-?\d+", qty.strip()):
            held[item] = int(qty)
    return held


class Ask(StrEnum):
    QTY = "qty"
    MOST = "most"
    TOTAL = "total"


@dataclass(frozen=True, slots=True)
class Question:
    """A question at ``step`` about the inventory after that step's event: ``truth`` is the
    answer the warehouse gives, ``book`` the one its events imply (they differ after drift)."""

    step: int
    ask: Ask
    item: str
    shelf: str
    truth: str
    book: str

    def text(self) -> str:
        return question_text(self.ask, self.item, self.shelf)


def question_text(ask: Ask, item: str, shelf: str = "") -> str:
    if ask is Ask.QTY:
        return f"How many units of {item} are on shelf {shelf}?"
    if ask is Ask.MOST:
        return (
            f"Which shelf holds the most {item}? "
            "(the lowest-numbered on a tie; none if no shelf holds any)"
        )
    return f"How many units of {item} are in the warehouse in total?"


def answer_of(ask: Ask, item: str, shelf: str, inventory: Inventory) -> str:
    """The answer to a question from ``inventory``: what the truth, the book and the model
    all compute the same way."""
    if ask is Ask.QTY:
        return str(inventory.qty(shelf, item))
    if ask is Ask.MOST:
        return inventory.most(item)
    return str(inventory.total(item))


_ANSWER = re.compile(r"Answer: ([\w-]+) \[source: (\w+)\]")


def question_steps(horizon: int) -> list[int]:
    """About eight evenly spread question steps, the last step always among them."""
    every = max(2, horizon // 8)
    return sorted({s for s in range(every - 1, horizon, every)} | {horizon - 1})


@dataclass(slots=True)
class Warehouse:
    """A generated warehouse session (``build`` makes one); a ``Workload`` (whose attributes
    are plain variables, hence not frozen)."""

    horizon: int
    seed: int
    events: tuple[Event, ...]
    questions: Mapping[int, Question]
    telemetry: Mapping[int, tuple[str, ...]]
    truth: Inventory
    """The warehouse after the last step."""
    drifts: tuple[str, ...] = ()
    """What the outside actor did, one line each (for reports; never shown to the model)."""
    name: str = "warehouse"
    system: str = SYSTEM
    tools: Sequence[ToolSpec] = TOOLS
    steps_end_with_text: bool = True
    """A step is an ``observe`` round, then the model's note or answer (``bench.run``)."""
    inline: bool = False
    """The paper's layout: the step's event is in its message (no ``observe`` round)."""
    settings: Mapping[str, object] = field(default_factory=lambda: dict(SETTINGS))
    """The gateway settings a user would give this task (``bench.run`` puts an arm's own
    over them)."""

    def instruction(self, step: int) -> str | None:
        if not 0 <= step < self.horizon:
            return None
        if self.inline:
            head = f"Step {step}/{self.horizon}: {self.events[step].text()}"
            question = self.questions.get(step)
            if question is None:
                said = f"{head}; reply 'Noted step {step}.'"
            else:
                said = (
                    f"{head}; then answer: {question.text()} "
                    "Reply 'Answer: <value> [source: context|state]'."
                )
            lines = self.telemetry.get(step, ())
            return "\n".join([said, PAPER_TELEMETRY_HEADER, *lines]) if lines else said
        head = f"Step {step}/{self.horizon}: call observe for this step's event"
        question = self.questions.get(step)
        if question is None:
            return f"{head}, then reply 'Noted step {step}.'"
        return (
            f"{head}, then answer: {question.text()} "
            "Reply 'Answer: <value> [source: context|state]'."
        )

    def execute(self, call: Call) -> str:
        step = step_of(call.id)
        if call.name != OBSERVE:
            return f"Unknown tool {call.name!r}: the only tool is {OBSERVE}."
        if step is None or not 0 <= step < self.horizon:
            return f"No event for call id {call.id!r}: observe with the step's call id."
        text = self.events[step].text()
        lines = self.telemetry.get(step, ())
        return "\n".join([text, TELEMETRY_HEADER, *lines]) if lines else text

    def model(self, variant: Variant) -> Policy:
        from skillstate.bench.workloads.warehouse_model import WarehouseModel

        return WarehouseModel(variant)

    def score(self, answers: Sequence[Answer]) -> Score:
        by_step = {answer.step: answer.text for answer in answers}
        right = kept = 0
        sources: dict[str, str] = {}
        for step, question in sorted(self.questions.items()):
            found = _ANSWER.search(by_step.get(step, ""))
            value, source = (found.group(1), found.group(2)) if found else (None, "lost")
            right += value == question.truth
            if value == question.book:
                kept += 1
                sources[f"q{step}"] = source if source in ("context", "state") else "context"
            else:
                sources[f"q{step}"] = "lost"
        asked = len(self.questions) or 1
        return Score(right / asked, kept / asked, sources)


def build(
    horizon: int, seed: int, *, noise: int = 0, drift: bool = False, paper_layout: bool = False
) -> Warehouse:
    """The session of ``horizon`` steps for ``seed``: events from ``random.Random(seed)``;
    ``noise`` telemetry lines per step and the drift from streams of their own, so noise never
    changes the events. ``paper_layout``: the SKILL.state paper's layout (the
    ``warehouse-paper`` workload): each step's event in its message (its noise lines after it,
    under ``PAPER_TELEMETRY_HEADER``), no tool, and whole lots shipped and moved, at most
    ``MAX_LOTS`` of them held (``_lot_event``), so the inventory, like the paper's flat
    prompt, does not grow with the horizon."""
    if horizon < 1:
        raise ValueError(f"horizon must be at least 1, not {horizon}")
    if noise < 0:
        raise ValueError(f"noise must be at least 0, not {noise}")
    rng = random.Random(seed)
    drifting = random.Random(f"warehouse-drift-{seed}") if drift else None
    truth, book = Inventory(), Inventory()
    asked = set(question_steps(horizon))
    events: list[Event] = []
    questions: dict[int, Question] = {}
    drifts: list[str] = []
    for step in range(horizon):
        event = _lot_event(rng, step, truth) if paper_layout else _event(rng, step, truth)
        truth.apply(event)
        book.apply(event)
        events.append(event)
        if drifting is not None and drifting.random() < DRIFT_CHANCE:
            moved = _drift(drifting, truth)
            if moved:
                drifts.append(f"after step {step}: {moved}")
        if step in asked:
            questions[step] = _question(rng, step, truth, book)
    telemetry = _telemetry(seed, horizon, noise)
    built = (horizon, seed, tuple(events), questions, telemetry, truth, tuple(drifts))
    if paper_layout:
        return Warehouse(*built, "warehouse-paper", INLINE_SYSTEM, (), inline=True)
    return Warehouse(*built)


def _event(rng: random.Random, step: int, truth: Inventory) -> Event:
    stocked = sorted((s, i) for s, held in truth.cells.items() for i, q in held.items() if q > 0)
    roll = rng.random()
    if not stocked or roll < 0.35:
        return Event(step, Kind.STORE, rng.choice(ITEMS), rng.randint(1, 50), rng.choice(SHELVES))
    if roll < 0.75:
        shelf, item = rng.choice(stocked)
        qty = rng.randint(1, truth.qty(shelf, item))
        if roll < 0.55:
            return Event(step, Kind.SHIP, item, qty, shelf)
        to = rng.choice([s for s in SHELVES if s != shelf])
        return Event(step, Kind.MOVE, item, qty, shelf, to)
    return Event(step, Kind.WAIT)


def _lot_event(rng: random.Random, step: int, truth: Inventory) -> Event:
    """The paper's layout: Store a lot (0.35), Ship (0.30) or Move (0.20) a whole lot, Wait
    (0.15); a Store that would hold more than ``MAX_LOTS`` lots ships one instead."""
    stocked = sorted((s, i) for s, held in truth.cells.items() for i, q in held.items() if q > 0)
    roll = rng.random()
    full = len(stocked) >= MAX_LOTS
    if not stocked or (roll < 0.35 and not full):
        return Event(step, Kind.STORE, rng.choice(ITEMS), rng.randint(1, 50), rng.choice(SHELVES))
    if roll >= 0.85:
        return Event(step, Kind.WAIT)
    shelf, item = rng.choice(stocked)
    qty = truth.qty(shelf, item)
    if roll < 0.65:
        return Event(step, Kind.SHIP, item, qty, shelf)
    to = rng.choice([s for s in SHELVES if s != shelf])
    return Event(step, Kind.MOVE, item, qty, shelf, to)


def _drift(rng: random.Random, truth: Inventory) -> str:
    stocked = sorted((s, i) for s, held in truth.cells.items() for i, q in held.items() if q > 0)
    if not stocked:
        return ""
    shelf, item = rng.choice(stocked)
    to = rng.choice([s for s in SHELVES if s != shelf])
    qty = truth.qty(shelf, item)
    truth.add(shelf, item, -qty)
    truth.add(to, item, qty)
    return f"{qty} {item} moved from {shelf} to {to}"


def _question(rng: random.Random, step: int, truth: Inventory, book: Inventory) -> Question:
    stocked = sorted((s, i) for s, held in truth.cells.items() for i, q in held.items() if q > 0)
    ask = rng.choice(list(Ask))
    if stocked:
        shelf, item = rng.choice(stocked)
    else:
        ask, shelf, item = Ask.TOTAL, "", rng.choice(ITEMS)
    if ask is not Ask.QTY:
        shelf = ""
    return Question(
        step,
        ask,
        item,
        shelf,
        answer_of(ask, item, shelf, truth),
        answer_of(ask, item, shelf, book),
    )


def _telemetry(seed: int, horizon: int, noise: int) -> dict[int, tuple[str, ...]]:
    if noise == 0:
        return {}
    rng = random.Random(f"warehouse-noise-{seed}")
    sensors = ("dock", "conveyor", "forklift", "hvac", "scanner", "door")
    return {
        step: tuple(
            f"{rng.choice(sensors)}-{rng.randint(1, 9)} load={rng.random():.3f} "
            f"temp={rng.uniform(12, 30):.1f}C seq={rng.randint(0, 99999):05d}"
            for _ in range(noise)
        )
        for step in range(horizon)
    }
