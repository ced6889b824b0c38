"""The warehouse workload's scripted model: it answers from what the request shows, nothing else.

Per request it reads (``testing.session_view.read_request``):

* Σ as the gateway showed it: paper mode's ``State Σ:`` block; in hybrid the Σ message's
  snapshot, then the tail note (Σ whole before the first boundary, or the changes since the
  snapshot, merged into it). ``done.events`` (``"through step 12"``) says how far it goes;
  Σ's ``step`` is not used (in hybrid the gateway's seed counts turns there).
* the newest instruction (``Step s/h: ...``): the step and its question;
* every ``observe`` result the request holds (the event text is tagged with its step), and in
  the paper's layout every event a user message states (``[step s] ...``);
* the notes a client carries for it (the ``memory`` and ``stateful`` arms,
  ``bench.workload.with_notes``), or that it wrote in a reply it is shown: Σ's stand-in there.

The inventory is Σ's ``findings`` with every visible event after Σ's step applied, in order.
Then: if the newest observed step is before ``s``, call ``observe`` for ``s``; else answer.

At the gateway's handover (the request ends in its instruction to write Σ before the history
is collapsed) CAREFUL and FAULTY reply with the patch that brings Σ up to every event the
request shows; CARELESS with ``{}``.

Where the client asks for notes (``NOTES_HEADING``), the model ends its answer with Σ whole
(``full_notes``) under ``Notes:``; CARELESS repeats the notes it was given.

Writing Σ, by ``Variant``: CAREFUL patches Σ at each answer with the shelves that differ from
Σ and ``done.events`` (hybrid: a ``skill_state`` call first, then the answer in the round
after its result; paper: the answer envelope's ``state_patch``; off: nothing to write with).
CARELESS never patches (paper: ``{}``). FAULTY sends a bad patch on every third step (a
whole-collection overwrite with an array, a shelf's contents as an object, JSON that does not
parse), and when the gateway's rejection comes back (the ``skill_state`` result, or paper
mode's correction note on its retry) sends the good patch; the rejection is all it sees.
In paper mode a patch that was lost anyway (a stream's envelope is checked once and not
retried) is caught up on the next request, while the observation still shows its event: when
Σ's step is behind the observed one, the envelope of the ``observe`` call carries the patch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from skillstate.bench.workload import (
    NOTES_HEADING,
    Variant,
    call_id,
    notes_block,
    notes_of,
    step_of,
)
from skillstate.bench.workloads.warehouse import (
    OBSERVE,
    Ask,
    Event,
    Inventory,
    answer_of,
    parse_event,
    parse_shelf,
)
from skillstate.conversation import Json
from skillstate.state.merge import merge
from skillstate.support import jsonio
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedCall
from skillstate.testing.session_view import (
    NOTE_PREFIX,
    PAPER_STATE,
    Seen,
    handing_over,
    read_request,
    tool_names,
)

SKILL_STATE = "skill_state"
_JSON_BLOCK = re.compile(r"```json\n(.*?)\n```", re.S)
_CHANGES = "Σ changes since the state message"
_THROUGH = re.compile(r"through step (-?\d+)")
_INSTRUCTION = re.compile(
    r"^Step (\d+)/(\d+): .*?(?:then answer: (.*?) Reply 'Answer|\Z)", re.M | re.S
)
_QTY = re.compile(r"How many units of (\S+) are on shelf (S\d{3})\?")
_MOST = re.compile(r"Which shelf holds the most (\S+)\?")
_TOTAL = re.compile(r"How many units of (\S+) are in the warehouse in total\?")
_REJECTED = ("Patch rejected", "Patch refused", "Your last reply could not be used")


@dataclass(frozen=True, slots=True)
class Reading:
    """What one request tells the model: Σ (``None``: none shown), the step Σ goes through
    (-1: none), the inventory rebuilt from Σ and the visible events, the shelves that came
    from Σ, and the newest observed step (-1: none)."""

    sigma: Json | None
    through: int
    inventory: Inventory
    from_state: frozenset[tuple[str, str]]
    observed: int


def read(seen: Sequence[Seen]) -> Reading:
    """The model's reading of a request (see the module docstring)."""
    sigma = _sigma(seen)
    findings = sigma.get("findings") if isinstance(sigma, dict) else None
    done = sigma.get("done") if isinstance(sigma, dict) else None
    events_note = done.get("events") if isinstance(done, dict) else None
    through_match = _THROUGH.search(events_note) if isinstance(events_note, str) else None
    through = int(through_match.group(1)) if through_match else -1
    inventory = Inventory()
    for shelf, text in (findings or {}).items() if isinstance(findings, dict) else ():
        if isinstance(text, str):
            for item, qty in parse_shelf(text).items():
                inventory.add(shelf, item, qty)
    from_state = frozenset((s, i) for s, held in inventory.cells.items() for i in held)
    events: dict[int, Event] = {}
    for message in seen:
        for cid, output in message.results:
            step = step_of(cid)
            event = parse_event(output) if step is not None else None
            if event is not None and event.step == step:
                events[step] = event
        for text in message.own_texts if message.role == "user" else ():
            if (event := parse_event(text)) is not None:  # the paper's layout: in the step
                events[event.step] = event
    for step in sorted(events):
        if step > through:
            inventory.apply(events[step])
    return Reading(sigma, through, inventory, from_state, max(events, default=-1))


def _sigma(seen: Sequence[Seen]) -> Json | None:
    sigma: Json | None = None
    for message in seen:
        for text in message.own_texts:  # the notes a client carries, or the model wrote
            if (notes := notes_of(text)) is not None:
                sigma = _object(notes)
        if message.role != "user":
            continue
        for text in message.texts:
            paper = PAPER_STATE.search(text)
            if paper is not None:
                sigma = _object(paper.group(1))
                continue
            block = _JSON_BLOCK.search(text) if text.startswith(NOTE_PREFIX) else None
            if block is None:
                continue
            value = _object(block.group(1))
            if _CHANGES in text and sigma is not None:
                merged = merge(sigma, value)
                sigma = merged if isinstance(merged, dict) else sigma
            else:
                sigma = value
    return sigma


def _object(text: str) -> Json:
    try:
        value = jsonio.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class Asked:
    """The newest instruction: its step and, at a question step, the question."""

    step: int
    ask: Ask | None = None
    item: str = ""
    shelf: str = ""


def instruction(seen: Sequence[Seen]) -> Asked | None:
    """The newest ``Step s/h`` instruction among the user's texts (paper mode's task slot
    included), or None."""
    found: Asked | None = None
    for message in seen:
        if message.role != "user":
            continue
        for text in message.own_texts:
            for match in _INSTRUCTION.finditer(text):
                found = _asked(int(match.group(1)), match.group(3) or "")
    return found


def _asked(step: int, question: str) -> Asked:
    if match := _QTY.search(question):
        return Asked(step, Ask.QTY, match.group(1), match.group(2))
    if match := _MOST.search(question):
        return Asked(step, Ask.MOST, match.group(1))
    if match := _TOTAL.search(question):
        return Asked(step, Ask.TOTAL, match.group(1))
    return Asked(step)


def answer_text(asked: Asked, reading: Reading) -> str:
    if asked.ask is None:
        return f"Noted step {asked.step}."
    value = answer_of(asked.ask, asked.item, asked.shelf, reading.inventory)
    used = {(asked.shelf, asked.item)} if asked.ask is Ask.QTY else None
    touched = (
        used if used is not None else {(s, i) for s, i in reading.from_state if i == asked.item}
    )
    source = "state" if touched & reading.from_state else "context"
    return f"Answer: {value} [source: {source}]"


def good_patch(step: int, reading: Reading) -> Json:
    """The shelves whose contents differ from Σ's ``findings`` (null: emptied) and
    ``done.events``: a small patch that merges shelf by shelf."""
    sigma = reading.sigma or {}
    held = sigma.get("findings")
    before = held if isinstance(held, dict) else {}
    after = reading.inventory.findings()
    changed: dict[str, Any] = {s: t for s, t in after.items() if before.get(s) != t}
    changed.update({s: None for s in before if s not in after})
    patch: Json = {"done": {"events": f"through step {step}"}}
    if changed:
        patch["findings"] = changed
    return patch


def full_notes(step: int, reading: Reading) -> Json:
    """Σ whole, as a client that carries the model's notes asks for it: ``done.events`` and
    every non-empty shelf."""
    return {"done": {"events": f"through step {step}"}, "findings": reading.inventory.findings()}


def _keeps_notes(seen: Sequence[Seen]) -> bool:
    return any(NOTES_HEADING in t for m in seen if m.role == "user" for t in m.own_texts)


def bad_patch(step: int, reading: Reading) -> tuple[str, Json | str]:
    """FAULTY's bad patch for ``step``: a kind and the patch (a string: broken JSON)."""
    shelves = reading.inventory.findings()
    kind = ("overwrite", "wrong-type", "broken-json")[(step // 3) % 3]
    if kind == "overwrite":
        return kind, {"findings": [f"{s}: {t}" for s, t in shelves.items()]}
    if kind == "wrong-type":
        contents = {s: dict(h) for s, h in reading.inventory.cells.items()}
        return kind, {"findings": contents or {"S001": {"none": 0}}}
    return kind, jsonio.dumps_str(good_patch(step, reading))[:-2]


@dataclass(frozen=True, slots=True)
class WarehouseModel:
    """``ScriptedUpstream(WarehouseModel(Variant.CAREFUL))``: a ``Policy`` (see the module
    docstring)."""

    variant: Variant

    def __call__(self, recorded: RecordedRequest) -> Reply:
        seen = read_request(recorded)
        asked = instruction(seen)
        reading = read(seen)
        paper = any(PAPER_STATE.search(t) for m in seen if m.role == "user" for t in m.texts)
        if handing_over(seen):  # Σ from the whole history, just before it is collapsed
            careless = self.variant is Variant.CARELESS
            return Reply(
                text=jsonio.dumps_str({} if careless else good_patch(reading.observed, reading))
            )
        if asked is None:
            return _reply(paper, {}, "No step to work on.")
        if reading.observed < asked.step:
            call = ScriptedCall(OBSERVE, {}, id=call_id(asked.step))
            return _reply(paper, self._catch_up(paper, reading), f"observe step {asked.step}", call)
        text = answer_text(asked, reading)
        if _keeps_notes(seen):  # the paper's Memory and Stateful baselines
            careless = self.variant is Variant.CARELESS
            notes = (reading.sigma or {}) if careless else full_notes(asked.step, reading)
            return Reply(text=f"{text}\n\n{notes_block(jsonio.dumps_str(notes))}")
        rejected = _rejected_now(seen)
        if paper:
            return self._paper(asked.step, reading, text, rejected)
        if self.variant is Variant.CARELESS or SKILL_STATE not in tool_names(recorded):
            return Reply(text=text)
        internal = _internal_result(seen)
        if internal is not None and not rejected:
            return Reply(text=text)
        patch: Json | str = good_patch(asked.step, reading)
        if self._faulty(asked.step) and internal is None:
            patch = bad_patch(asked.step, reading)[1]
        suffix = "state" if internal is None else "state1"
        call_name = f"call_s{asked.step:04d}_{suffix}"
        return Reply(calls=[ScriptedCall(SKILL_STATE, {"patch": patch}, id=call_name)])

    def _catch_up(self, paper: bool, reading: Reading) -> Json:
        """Paper mode, before observing: the patch that brings Σ up to the observation it
        shows, when a patch was lost (a streamed reply's rejected envelope is not retried)."""
        if not paper or self.variant is Variant.CARELESS or reading.through >= reading.observed:
            return {}
        return good_patch(reading.observed, reading)

    def _faulty(self, step: int) -> bool:
        return self.variant is Variant.FAULTY and step % 3 == 1

    def _paper(self, step: int, reading: Reading, text: str, rejected: bool) -> Reply:
        if self.variant is Variant.CARELESS:
            return _reply(True, {}, text)
        if self._faulty(step) and not rejected:
            kind, patch = bad_patch(step, reading)
            if kind == "broken-json" and isinstance(patch, str):
                return Reply(text='{"state_patch": ' + patch + ', "action": "' + text + '"')
            return _reply(True, patch, text)
        return _reply(True, good_patch(step, reading), text)


def _reply(paper: bool, patch: Json | str, text: str, call: ScriptedCall | None = None) -> Reply:
    calls = [call] if call is not None else []
    if not paper:
        return Reply(text="" if call is not None else text, calls=calls)
    return Reply(text=jsonio.dumps_str({"state_patch": patch, "action": text}), calls=calls)


def _after_assistant(seen: Sequence[Seen]) -> Sequence[Seen]:
    last = max((i for i, m in enumerate(seen) if m.role == "assistant"), default=-1)
    return seen[last + 1 :]


def _internal_result(seen: Sequence[Seen]) -> str | None:
    """The newest ``skill_state`` result after the newest assistant message (a continuation
    round of the gateway's), or None."""
    found = None
    for message in _after_assistant(seen):
        for cid, output in message.results:
            if "_state" in cid and step_of(cid) is None:
                found = output
    return found


def _rejected_now(seen: Sequence[Seen]) -> bool:
    """Whether the newest round brought a rejection: a refused ``skill_state`` result, or
    paper mode's correction note."""
    texts = [t for m in _after_assistant(seen) for t in m.texts if m.role == "user"]
    internal = _internal_result(seen)
    if internal is not None:
        texts.append(internal)
    return any(t.startswith(_REJECTED) for t in texts)
