"""What the session workloads share: the facts a workload probes, the plan of its steps, the
scripted model that plays the plan, and the scoring.

A ``Fact`` is one thing the session shows once (a port in a file, the expected value of a
failing assertion, a review finding) and asks about later: ``pattern`` finds it in any text
(its first group is the value), ``query`` is what the model asks ``recall`` for, ``value`` is
the generator's truth, which the model never reads.

The model (``FactModel``) answers a probe from its input only, in this order: the fact in the
conversation (``context``), in a gateway message, the Σ message or the tail note (``state``),
in the answer to a ``recall`` call with the fact's query (``recall``), else ``unknown``
(``lost``). At the gateway's handover (its instruction to write Σ before the history is
collapsed) it replies with a patch of everything it noticed so far. Each answer line reads
``- key: value [source]``; ``score`` reads those lines back against the truth.

Where the model is comes from its own call ids (``workload.call_id``): the newest result of
the client's tools is of step ``s - 1``; each text answer after it (a probe's) moves one step
on. Internal calls get ids no client result has (``call_s0012_recall0``, ``call_s0012_state``),
so the gateway's rounds never look like a step.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillstate.bench.workload import Answer, Score, Variant, call_id, step_of
from skillstate.support import jsonio
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedCall
from skillstate.testing.session_view import (
    NOTE_PREFIX,
    PAPER_STATE,
    Call,
    Seen,
    handing_over,
    paper_state,
    read_request,
    tool_names,
)

SKILL_STATE = "skill_state"
RECALL = "recall"
SOURCES = ("context", "state", "recall", "lost")
UNKNOWN = "unknown"
_INTERNAL_ID = re.compile(r"_s(\d+)_(state|recall)(\d*)\Z")
_ANSWER_LINE = re.compile(r"^- (\S+): (.*?) \[(context|state|recall|lost)\]$", re.M)


@dataclass(frozen=True, slots=True)
class Fact:
    """A fact seen at ``step`` (in the results of that step's calls) and probed later."""

    key: str
    pattern: re.Pattern[str]
    value: str
    query: str
    step: int


@dataclass(frozen=True, slots=True)
class Probe:
    """A user question at ``step``, answered in text, about ``facts``."""

    step: int
    text: str
    facts: tuple[Fact, ...]


@dataclass(frozen=True, slots=True)
class Use:
    """One planned call of a client tool."""

    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PlannedStep:
    """The model's answer at one step: ``uses`` (in parallel), or a text: the probe's answer
    when ``probe`` is set, else ``final``. ``remember`` is a user instruction of this step the
    model notes in Σ (``decisions``)."""

    uses: tuple[Use, ...] = ()
    probe: Probe | None = None
    final: str = ""
    remember: str | None = None


Noticer = Callable[[int, Sequence[tuple[Call | None, str]]], list[tuple[str, str]]]
"""What the model notices in the results of step ``s`` (each with the call it answers, when
the request still holds it): ``(slug, line)`` pairs it notes in Σ."""


def fact_noticer(facts: Sequence[Fact]) -> Noticer:
    """Notices each fact's matching text wherever a result shows it."""

    def notice(step: int, results: Sequence[tuple[Call | None, str]]) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for fact in facts:
            for _, output in results:
                if match := fact.pattern.search(output):
                    found.append((fact.key, match.group(0)))
                    break
        return found

    return notice


@dataclass(slots=True)
class FactModel:
    """``ScriptedUpstream(FactModel(...))``: plays ``steps`` (step ``i`` is ``steps[i]``) as
    ``variant``. With ``say_notes`` what it notices is also said in the text beside its
    calls (a reviewer writing its findings down). ``seed`` picks which patches ``FAULTY``
    spoils."""

    steps: Sequence[PlannedStep]
    variant: Variant
    notice: Noticer
    seed: int = 0
    say_notes: bool = False
    recalls: list[int] = field(default_factory=list)
    """Indexes of the requests the model answered with ``recall`` calls."""

    def __call__(self, recorded: RecordedRequest) -> Reply:
        seen = read_request(recorded)
        sigma = paper_state(seen)
        offered = tool_names(recorded)
        if sigma is not None:
            return self._paper(seen, sigma, offered)
        step = current_step(seen)
        internal = _internal_results(seen)
        planned = self.steps[step] if 0 <= step < len(self.steps) else None
        if handing_over(seen):
            return Reply(text=jsonio.dumps_str(self._handover(step, seen)))
        if planned is None:
            return Reply(text="Done.")
        if planned.probe is not None:
            return self._answer(recorded.index, step, planned.probe, seen, internal, offered)
        if planned.final and not planned.uses:
            return Reply(text=planned.final)
        noted = self.notice(step - 1, _results_of(seen, step - 1)) if step > 0 else []
        calls = [
            ScriptedCall(use.name, use.arguments, id=call_id(step, k))
            for k, use in enumerate(planned.uses)
        ]
        patch = self._patch(step, noted, planned) if SKILL_STATE in offered else None
        if patch is not None and not internal:
            calls.insert(0, ScriptedCall(SKILL_STATE, patch, id=_internal_id(step, "state")))
        text = "\n".join(line for _, line in noted) if self.say_notes else ""
        return Reply(text=text, calls=calls)

    def _answer(
        self,
        index: int,
        step: int,
        probe: Probe,
        seen: Sequence[Seen],
        internal: Mapping[str, str],
        offered: frozenset[str],
    ) -> Reply:
        found = {fact.key: find(fact, seen) for fact in probe.facts}
        missing = [f for f in probe.facts if found[f.key] is None]
        if missing and RECALL in offered and not internal:
            self.recalls.append(index)
            calls = [
                ScriptedCall(RECALL, {"query": f.query}, id=_internal_id(step, "recall", j))
                for j, f in enumerate(missing)
            ]
            return Reply(calls=calls)
        recalled = "\n".join(text for name, text in internal.items() if name.startswith(RECALL))
        lines = []
        for fact in probe.facts:
            hit = found[fact.key]
            if hit is None and (match := fact.pattern.search(recalled)):
                hit = (match.group(1), "recall")
            value, source = hit or (UNKNOWN, "lost")
            lines.append(f"- {fact.key}: {value} [{source}]")
        return Reply(text="Here is what I found:\n" + "\n".join(lines))

    def _paper(
        self, seen: Sequence[Seen], sigma: Mapping[str, Any], offered: frozenset[str]
    ) -> Reply:
        """Paper mode: the request holds Σ and the latest observation only, so the step is one
        past Σ's ``step`` when that is further than the observation shows (a probe's answer
        leaves no result behind), and every reply is an envelope whose patch notes the step
        (and, but for CARELESS, what the model noticed). FAULTY spoils some patches, and
        sends the good one when the gateway's correction comes back. A probe whose fact is
        in neither Σ nor the observation is answered through ``recall`` where it is offered
        (the gateway's round brings the answer back, at the same step)."""
        internal = _internal_results(seen)
        done = sigma.get("step")
        step = max(observed_step(seen), done + 1 if isinstance(done, int) else 0)
        if internal:  # the gateway's recall round: the step that asked
            step = _internal_step(seen, step)
        planned = self.steps[step] if 0 <= step < len(self.steps) else None
        if planned is None:
            return _envelope({"step": step}, "Done.")
        noted = self.notice(step - 1, _results_of(seen, step - 1)) if step > 0 else []
        patch: Any = {"step": step}
        if self.variant is not Variant.CARELESS:
            if noted:
                patch["findings"] = self._findings(noted)
            if planned.remember:
                patch["decisions"] = {"user-note": planned.remember}
            if self.variant is Variant.FAULTY and not _corrected(seen):
                patch = spoiled(patch, random.Random(f"faulty:{self.seed}:{step}"))
        if planned.probe is not None:
            found = {fact.key: find(fact, seen) for fact in planned.probe.facts}
            missing = [f for f in planned.probe.facts if found[f.key] is None]
            if missing and RECALL in offered and not internal:
                calls = [
                    ScriptedCall(RECALL, {"query": f.query}, id=_internal_id(step, "recall", j))
                    for j, f in enumerate(missing)
                ]
                return _envelope(patch, "recalling", calls)
            recalled = "\n".join(t for name, t in internal.items() if name.startswith(RECALL))
            for fact in missing:
                if match := fact.pattern.search(recalled):
                    found[fact.key] = (match.group(1), "recall")
            lines = [
                "- {}: {} [{}]".format(f.key, *(found[f.key] or (UNKNOWN, "lost")))
                for f in planned.probe.facts
            ]
            return _envelope(patch, "Here is what I found:\n" + "\n".join(lines))
        if planned.final and not planned.uses:
            return _envelope(patch, planned.final)
        calls = [
            ScriptedCall(use.name, use.arguments, id=call_id(step, k))
            for k, use in enumerate(planned.uses)
        ]
        names = ", ".join(use.name for use in planned.uses)
        return _envelope(patch, f"step {step}: {names}", calls)

    def _handover(self, step: int, seen: Sequence[Seen]) -> Any:
        """The handover's patch (the gateway asks for Σ before it collapses the history):
        what the model noticed in every step's results the request shows, and the
        instructions it was asked to remember; ``{}`` from CARELESS."""
        if self.variant is Variant.CARELESS:
            return {}
        patch: dict[str, Any] = {"step": step}
        noted = dict(pair for s in range(step) for pair in self.notice(s, _results_of(seen, s)))
        if noted:
            patch["findings"] = noted
        remembered = [p.remember for p in self.steps[: step + 1] if p.remember]
        if remembered:
            patch["decisions"] = {"user-note": remembered[-1]}
        return patch

    def _patch(self, step: int, noted: list[tuple[str, str]], planned: PlannedStep) -> Any:
        """The ``skill_state`` arguments for this step, or None: CAREFUL and FAULTY note what
        they noticed and the instruction to remember; FAULTY spoils some of those patches."""
        if self.variant is Variant.CARELESS or not (noted or planned.remember):
            return None
        patch: dict[str, Any] = {"step": step}
        if noted:
            patch["findings"] = self._findings(noted)
        if planned.remember:
            patch["decisions"] = {"user-note": planned.remember}
        if self.variant is Variant.FAULTY:
            return {"patch": spoiled(patch, random.Random(f"faulty:{self.seed}:{step}"))}
        return {"patch": patch}

    def _findings(self, noted: list[tuple[str, str]]) -> dict[str, str | None]:
        """What a patch says of the findings: what was noticed at this step, and for PRUNING
        a deletion of every other fact the session has (what it noted before)."""
        found: dict[str, str | None] = dict(noted)
        if self.variant is Variant.PRUNING:
            probed = (p.probe.facts for p in self.steps if p.probe is not None)
            found |= {fact.key: None for facts in probed for fact in facts if fact.key not in found}
        return found


def _corrected(seen: Sequence[Seen]) -> bool:
    """Whether the request is paper mode's retry: the model's own reply, then the gateway's
    note on why it could not be used (a paper request otherwise ends in results or the
    user's words after Σ, never after a reply of the model's)."""
    return (
        len(seen) >= 2
        and seen[-2].role == "assistant"
        and seen[-1].role == "user"
        and not seen[-1].results
    )


def _envelope(patch: Any, action: str, calls: Sequence[ScriptedCall] = ()) -> Reply:
    """A paper reply: the envelope as the text (a patch that is a string is sent as broken
    JSON, as FAULTY's cut-off patches are), the calls beside it."""
    if isinstance(patch, str):
        return Reply(text='{"state_patch": ' + patch, calls=list(calls))
    return Reply(text=jsonio.dumps_str({"state_patch": patch, "action": action}), calls=list(calls))


def spoiled(patch: dict[str, Any], rng: random.Random) -> Any:
    """``patch`` as a small open model may send it: unchanged two times in five, else with
    one of the three usual faults: the collection resent whole as a list (an overwrite), a
    wrong type (the step as a string), or JSON cut off mid-object."""
    roll = rng.random()
    if roll < 0.4:
        return patch
    if roll < 0.6:
        findings = patch.get("findings") or patch.get("decisions") or {}
        return {"step": patch["step"], "findings": list(findings.values())}
    if roll < 0.8:
        return {**patch, "step": str(patch["step"])}
    text = jsonio.dumps_str(patch)
    return text[: max(1, len(text) * 2 // 3)]


def find(fact: Fact, seen: Sequence[Seen]) -> tuple[str, str] | None:
    """The fact's value and source in what the request holds, the conversation first:
    ``context`` (any message of the client's), ``state`` (a gateway message); the results of
    internal calls are not counted here."""
    sources: dict[str, str] = {}
    for message in seen:
        pieces = [(t, "state" if _from_state(t) else "context") for t in message.texts]
        pieces += [(c.arguments, "context") for c in message.calls]
        pieces += [(out, "context") for cid, out in message.results if not _is_internal(cid)]
        for text, source in pieces:
            if match := fact.pattern.search(text):
                sources.setdefault(source, match.group(1))
    for source in ("context", "state"):
        if source in sources:
            return sources[source], source
    return None


def _from_state(text: str) -> bool:
    """A gateway message (the Σ message, the tail note) or paper mode's Σ block."""
    return text.startswith(NOTE_PREFIX) or PAPER_STATE.search(text) is not None


def observed_step(seen: Sequence[Seen]) -> int:
    """One past the newest step whose client results the request holds (0: none)."""
    return _newest_results(seen)[0] + 1


def _newest_results(seen: Sequence[Seen]) -> tuple[int, int]:
    """The newest step whose client results the request holds, and the message holding them
    (-1, -1: none)."""
    done, at = -1, -1
    for i, message in enumerate(seen):
        for cid, _ in message.results:
            step = step_of(cid)
            if step is not None and step >= done:
                done, at = step, i
    return done, at


def current_step(seen: Sequence[Seen]) -> int:
    """The step the request asks for: one past the newest step whose client results it holds
    (0: none), plus one per text answer the model gave since."""
    done, at = _newest_results(seen)
    answers = sum(
        1
        for message in seen[at + 1 :]
        if message.role == "assistant"
        and not message.calls
        and not message.from_gateway
        and any(t.strip() for t in message.texts)
    )
    return done + 1 + answers


def score(probes: Sequence[Probe], answers: Sequence[Answer]) -> Score:
    """``score``: the mean over probes of the share of their facts answered with the true
    value; ``recall``: the share of probed facts the model found at all; ``sources``: per fact
    key, where it was found (``lost`` when it was not, or the probe got no answer)."""
    said = {answer.step: answer.text for answer in answers}
    shares: list[float] = []
    found = total = 0
    sources: dict[str, str] = {}
    for probe in probes:
        lines = {
            m.group(1): (m.group(2), m.group(3))
            for m in _ANSWER_LINE.finditer(said.get(probe.step, ""))
        }
        right = 0
        for fact in probe.facts:
            value, source = lines.get(fact.key, (UNKNOWN, "lost"))
            sources[fact.key] = source
            right += value == fact.value
            found += source != "lost"
            total += 1
        shares.append(right / len(probe.facts) if probe.facts else 1.0)
    return Score(
        score=sum(shares) / len(shares) if shares else 1.0,
        recall=found / total if total else 1.0,
        sources=sources,
    )


def _internal_id(step: int, tool: str, k: int | None = None) -> str:
    return f"call_s{step:04d}_{tool}{'' if k is None else k}"


def _is_internal(call_id: str) -> bool:
    return _INTERNAL_ID.search(call_id) is not None


def _internal_results(seen: Sequence[Seen]) -> dict[str, str]:
    """The results of internal calls after the newest assistant message (a continuation
    round), by id suffix: ``state``, ``recall0``, ``recall1``..."""
    found: dict[str, str] = {}
    for message in reversed(seen):
        if message.role == "assistant" and not message.calls and message.texts:
            break
        for cid, output in message.results:
            if match := _INTERNAL_ID.search(cid):
                found[match.group(2) + match.group(3)] = output
        if message.role == "assistant" and message.calls:
            break
    return found


def _internal_step(seen: Sequence[Seen], otherwise: int) -> int:
    """The step of the newest internal call whose result the request holds (its id says it),
    or ``otherwise``."""
    steps = [
        int(match.group(1))
        for message in seen
        for cid, _ in message.results
        if (match := _INTERNAL_ID.search(cid))
    ]
    return steps[-1] if steps else otherwise


def _results_of(seen: Sequence[Seen], step: int) -> list[tuple[Call | None, str]]:
    """The client results of ``step``'s calls, each with its call when the request holds it."""
    calls = {call.id: call for message in seen for call in message.calls}
    return [
        (calls.get(cid), output)
        for message in seen
        for cid, output in message.results
        if step_of(cid) == step
    ]
