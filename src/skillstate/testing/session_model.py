"""The scripted models of long sessions: policies that answer from what they were sent.

``CodingModel`` plays a coding agent through a ``SessionPlan`` (hybrid mode). It finds where it
is from the call ids in the request (``<prefix>_s<step>_<k>``: the newest result tells the
step), so it needs no memory of its own, and it answers the plan's probe from its input only:
the fact verbatim, in a gateway message (the Σ message or the tail note), or, when the request
holds it nowhere, by calling ``recall`` with a query and reading the gateway's answer. At the
gateway's handover (its instruction to write Σ before the history collapses) it replies with
every patch it made so far, merged.

``PaperModel`` plays paper mode: each request carries Σ and the latest observation only, and
the model's step and counter come from the Σ it reads, so a lost patch shows in the result.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from skillstate.conversation import Json
from skillstate.state.merge import merge
from skillstate.support import jsonio
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedCall
from skillstate.testing.session_tools import Dialect
from skillstate.testing.session_view import (
    NOTE_PREFIX,
    Seen,
    handing_over,
    read_request,
    tool_names,
)
from skillstate.testing.sessions import FACT_PHRASE, SessionPlan

FACT_PATTERN = re.compile(re.escape(FACT_PHRASE) + r": (rk-\d{4}-\d{4})")
_CALL_ID = re.compile(r"_s(\d{3})_(\d+|state|recall)\Z")
SKILL_STATE = "skill_state"
RECALL = "recall"


@dataclass(frozen=True, slots=True)
class ProbeAnswer:
    """How the model answered the probe in request ``request``: the ``value`` it found (None:
    nowhere) and where: ``verbatim`` (a message of the conversation), ``state`` (a gateway
    message: the Σ message or the tail note), ``recall`` (the gateway's answer to a recall)."""

    request: int
    value: str | None
    sources: frozenset[str]


@dataclass(slots=True)
class CodingModel:
    """``ScriptedUpstream(CodingModel(plan, CODEX))``; ``prefix`` starts every call id
    (``toolu`` suits Anthropic). ``answers`` and ``recalls`` (request indexes) are kept for
    the test to check."""

    plan: SessionPlan
    dialect: Dialect
    prefix: str = "call"
    answers: list[ProbeAnswer] = field(default_factory=list)
    recalls: list[int] = field(default_factory=list)

    def __call__(self, recorded: RecordedRequest) -> Reply:
        seen = read_request(recorded)
        offered = tool_names(recorded)
        patching = SKILL_STATE in offered  # only the tools offered are ever called
        step = _done_step(seen) + 1
        internal = _internal_results(seen)
        if handing_over(seen):
            return Reply(text=jsonio.dumps_str(self._handover(step, seen)))
        if RECALL in internal:
            match = FACT_PATTERN.search(internal[RECALL])
            value = match.group(1) if match else None
            self.answers.append(ProbeAnswer(recorded.index, value, frozenset({"recall"})))
            return self._act(step, seen, text=_answer(value), patching=patching)
        if SKILL_STATE in internal:
            return self._act(step, seen, patching=False)
        if _pending(seen, self.plan.probe):
            value, sources = _find_fact(seen)
            if value is None and RECALL in offered:
                self.recalls.append(recorded.index)
                call_id = f"{self.prefix}_s{step:03d}_recall"
                return Reply(calls=[ScriptedCall(RECALL, {"query": FACT_PHRASE}, id=call_id)])
            self.answers.append(ProbeAnswer(recorded.index, value, sources))
            return self._act(step, seen, text=_answer(value), patching=patching)
        return self._act(step, seen, patching=patching)

    def _act(self, n: int, seen: Sequence[Seen], *, patching: bool, text: str = "") -> Reply:
        step = self.plan.step(n)
        if step is None:
            return Reply(text=(text + "\n\n" if text else "") + "Finished: the tests pass.")
        patch = self._patch(n, seen) if patching else None
        state_call = ScriptedCall(SKILL_STATE, {"patch": patch}, id=f"{self.prefix}_s{n:03d}_state")
        if patch is not None and step.patch_alone:
            return Reply(text=text, calls=[state_call], reasoning=step.reasoning)
        calls = []
        for k, use in enumerate(step.uses):
            name, arguments = self.dialect.call(use)
            calls.append(ScriptedCall(name, arguments, id=f"{self.prefix}_s{n:03d}_{k}"))
        if patch is not None:
            calls.insert(0, state_call)
        return Reply(text=text, calls=calls, reasoning=step.reasoning)

    def _handover(self, step: int, seen: Sequence[Seen]) -> Json:
        """The gateway's handover (it asks for Σ before it collapses the history): every
        patch of the plan's steps so far merged, the fact when it notes facts and the request
        shows it, and the newest instruction."""
        patch: Json = {}
        for n in range(1, step):
            planned = self.plan.step(n)
            if planned is not None and planned.patch:
                merged = merge(patch, planned.patch)
                patch = merged if isinstance(merged, dict) else patch
        texts = "\n".join(out for m in seen for _, out in m.results)
        if self.plan.note_fact and (match := FACT_PATTERN.search(texts)):
            noted = {"release-key": f"{FACT_PHRASE}: {match.group(1)}"}
            patch["findings"] = {**patch.get("findings", {}), **noted}
        instruction = _pending_instruction(seen[:-1])
        if instruction is not None and instruction != self.plan.probe:
            patch["decisions"] = {"user-note": instruction}
        return patch

    def _patch(self, n: int, seen: Sequence[Seen]) -> Json | None:
        step = self.plan.step(n)
        patch: dict[str, Any] = dict(step.patch or {}) if step else {}
        newest = [out for m in seen[-3:] for _, out in m.results]
        if self.plan.note_fact and n == self.plan.fact_step + 1:
            match = FACT_PATTERN.search("\n".join(newest))
            if match:
                noted = {"release-key": f"{FACT_PHRASE}: {match.group(1)}"}
                patch["findings"] = {**patch.get("findings", {}), **noted}
        instruction = _pending_instruction(seen)
        if instruction is not None and instruction != self.plan.probe:
            patch["decisions"] = {"user-note": instruction}
        return patch or None


def _answer(value: str | None) -> str:
    if value is None:
        return f"I could not find the {FACT_PHRASE}."
    return f"The {FACT_PHRASE} is {value}."


def _step_of(call_id: str) -> tuple[int, str] | None:
    match = _CALL_ID.search(call_id)
    return (int(match.group(1)), match.group(2)) if match else None


def _done_step(seen: Sequence[Seen]) -> int:
    """The newest step whose results of the client's tools the request holds (0: none)."""
    done = 0
    for message in seen:
        for call_id, _ in message.results:
            parsed = _step_of(call_id)
            if parsed is not None and parsed[1].isdigit():
                done = max(done, parsed[0])
    return done


def _internal_results(seen: Sequence[Seen]) -> dict[str, str]:
    """The results of internal calls after the newest assistant message (a continuation
    round), by tool: ``skill_state`` or ``recall``."""
    found: dict[str, str] = {}
    for message in reversed(seen):
        if message.role == "assistant":
            break
        for call_id, output in message.results:
            parsed = _step_of(call_id)
            if parsed is not None and parsed[1] == "state":
                found[SKILL_STATE] = output
            elif parsed is not None and parsed[1] == "recall":
                found[RECALL] = output
    return found


def _newest(seen: Sequence[Seen]) -> Seen | None:
    """The newest message that is neither the gateway's nor a system message."""
    for message in reversed(seen):
        if not message.from_gateway and message.role not in ("system", "developer"):
            return message
    return None


def _pending_instruction(seen: Sequence[Seen]) -> str | None:
    """The user's newest words when nothing has answered them yet and a tool loop ran before
    them (the task itself is not counted)."""
    newest = _newest(seen)
    if newest is None or not newest.is_instruction:
        return None
    before = seen[: max(i for i, m in enumerate(seen) if m is newest)]
    if not any(m.role == "assistant" for m in before):
        return None
    return newest.own_texts[-1]


def _pending(seen: Sequence[Seen], probe: str) -> bool:
    return _pending_instruction(seen) == probe


def _find_fact(seen: Sequence[Seen]) -> tuple[str | None, frozenset[str]]:
    """The fact and where it was, text by text: an upstream wire that merges consecutive
    user messages puts the gateway's texts beside the client's in one message."""
    value: str | None = None
    sources: set[str] = set()
    for message in seen:
        pieces = [(text, text.startswith(NOTE_PREFIX)) for text in message.texts]
        pieces += [(call.arguments, False) for call in message.calls]
        pieces += [(output, False) for _, output in message.results]
        for text, ours in pieces:
            if match := FACT_PATTERN.search(text):
                value = match.group(1)
                sources.add("state" if ours else "verbatim")
    return value, frozenset(sources)


# Paper mode ----------------------------------------------------------------------------------

_STATE_BLOCK = re.compile(r"State Σ:\n```json\n(.*?)\n```", re.S)


@dataclass(slots=True)
class PaperModel:
    """Paper mode's model for ``steps`` steps of a custom loop with one ``run_step`` tool.

    Each reply is an envelope whose ``state_patch`` sets ``step`` to the Σ step it read plus
    one, adds that step to ``counter`` and, every ``findings_every`` steps, one ``findings``
    entry; its one call runs the step. ``problems`` lists what the requests got wrong (an
    observation that is not the previous step's result, Σ missing)."""

    steps: int
    findings_every: int = 10
    problems: list[str] = field(default_factory=list)
    tasks: list[str | None] = field(default_factory=list)

    def __call__(self, recorded: RecordedRequest) -> Reply:
        seen = read_request(recorded)
        slot = next((m for m in seen if m.role == "user"), None)
        block = _STATE_BLOCK.search("\n".join(slot.texts)) if slot else None
        if block is None:
            self.problems.append(f"request #{recorded.index}: no Σ")
            return Reply(text="{}")
        state = jsonio.loads(block.group(1))
        self.tasks.append(_task(slot.texts if slot else ()))
        n = int(state.get("step", 0)) + 1
        if n > 1 and not any(cid == f"call_p{n - 1:03d}" for m in seen for cid, _ in m.results):
            self.problems.append(f"request #{recorded.index}: no result of step {n - 1}")
        if n > self.steps:
            return Reply(text=jsonio.dumps_str({"state_patch": {}, "action": "finish"}))
        patch: dict[str, Any] = {"step": n, "counter": int(state.get("counter", 0)) + n}
        if n % self.findings_every == 0:
            patch["findings"] = {f"f{n:03d}": f"finding of step {n}"}
        envelope = {"state_patch": patch, "action": f"run step {n}"}
        call = ScriptedCall(
            "run_step", {"action": "test", "path": f"step_{n}"}, id=f"call_p{n:03d}"
        )
        return Reply(text=jsonio.dumps_str(envelope), calls=[call])


def _task(texts: Sequence[str]) -> str | None:
    joined = "\n".join(texts)
    if not joined.startswith("Task"):
        return None
    return joined.split("\n", 1)[1].split("\n\nState Σ:", 1)[0]
