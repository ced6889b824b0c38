"""The output compaction lane (``outputs``): a bulky tool output becomes a compact view and an
archive ref the model recalls the rest from.

A tool result whose text is at least ``min_chars`` long is replaced, inside its own result (so
the call and its result stay paired), by ``views.render``: one line saying it is a view and
how to recall the output exactly, the view of its kind (JSON, diff, log, text), and the exact
identifiers the view left out. The original is archived first, exactly (the runner keeps the
lane's writes before anything goes on; a lane whose writes cannot be kept is skipped), under
its content-addressed ref, in the session's archive index where ``recall`` finds it. Views
and identifiers go through ``redaction``: no secret reaches the model from a view; the
archive keeps the exact original, readable only through the gateway.

At an epoch boundary, a shorter output (at least ``boundary_min_chars``) in the turns the
boundary kept verbatim (``pipeline.settled``) becomes a view too, except in the newest
``fresh_turns``: that request misses the cache from the Σ message on anyway, and the same
outputs sit there on every request of the epoch. The turns before them are in Σ and the
archive already; the outputs after them, newer than the boundary, wait for the next.

Only where the gateway answers ``recall`` in that request (the state lane offers it once it
has rewritten the session: from the first boundary in hybrid mode, always in paper mode; and
in hybrid mode before the first boundary from the request whose outputs' views pay for the
cache miss of offering it, ``state.bulky``, which prices them by ``viewer``): before then
the request is left as pass-through would send it, and a view the model could not see
behind would lose content for it. The same output always gives the same bytes (the
view is a pure function of the text, the ref its hash), so once compacted an output stays the
same on every later request and the provider's prefix cache keeps hitting.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

from skillstate.archive import canonical_span, ref_for
from skillstate.conversation import Message, Part, Request, Role, Text, ToolResult
from skillstate.economics.tokenizer import count_tokens
from skillstate.outputs.redaction import redact
from skillstate.outputs.views import MIN_BUDGET, render, view_of
from skillstate.pipeline.archived import KnownArchived, text_of
from skillstate.pipeline.lane import ArchiveWrite, LaneContext, LaneOutcome
from skillstate.pipeline.settled import settled_results
from skillstate.pipeline.surface import LaneSpec
from skillstate.state.bulky import Viewer
from skillstate.state.mode import Mode
from skillstate.state.tools import recall_tool

MEMO_SIZE = 512
"""Outputs whose compaction is remembered (by content), and messages whose rewritten form is
(by identity): a history re-sends every output on every request, a view costs a pass over
its text, and a re-sent message rewritten to the same object keeps what was computed over it
downstream (``conversation.prefixes``)."""

VIEW_KINDS = ("log", "json", "diff", "text")
"""The kinds of view the lane makes (``skillstate.outputs.views``)."""

MIN_BOUNDARY_CHARS = 2_000
"""The shortest output a boundary makes a view of: a view of less says almost nothing."""


@dataclass(frozen=True, slots=True)
class OutputsOptions:
    """The ``outputs`` lane's. ``min_chars``: a tool output at least this long is replaced by
    its view when it arrives (if its kind is one of ``arrival``); ``budget_chars``: about how
    long a view is. ``boundary_min_chars``: at an epoch boundary, an output at least this long
    in the turns the boundary kept is replaced by its view too (about a quarter of its
    length), except in the newest ``fresh_turns`` turns (an output of ``min_chars`` or more
    is a view anyway)."""

    min_chars: int = 16_000
    budget_chars: int = 6_000
    boundary_min_chars: int = 4_000
    fresh_turns: int = 2
    arrival: tuple[str, ...] = ("log", "json")

    def __post_init__(self) -> None:
        if self.budget_chars < 1_000:
            raise ValueError(f"budget_chars must be at least 1000, not {self.budget_chars}")
        if self.min_chars < 2 * self.budget_chars:
            raise ValueError(
                f"min_chars must be at least twice budget_chars ({2 * self.budget_chars}), "
                f"not {self.min_chars}: a view would save too little"
            )
        if self.boundary_min_chars < MIN_BOUNDARY_CHARS:
            raise ValueError(
                f"boundary_min_chars must be at least {MIN_BOUNDARY_CHARS}, "
                f"not {self.boundary_min_chars}"
            )
        unknown = sorted(set(self.arrival) - set(VIEW_KINDS))
        if unknown:
            raise ValueError(
                f"arrival: {', '.join(unknown)} is not a view kind ({', '.join(VIEW_KINDS)})"
            )
        if self.fresh_turns < 1:
            raise ValueError(f"fresh_turns must be at least 1, not {self.fresh_turns}")


@dataclass(frozen=True, slots=True)
class _Compacted:
    """An output's replacement text, the ref of its original and that original's bytes."""

    text: str
    ref: str
    data: bytes
    saved: int
    """Tokens the view saves over the output."""
    call_id: str
    kind: str
    """The view's kind (``views``: json, log, diff, text)."""


@dataclass(slots=True)
class _Found:
    compacted: list[_Compacted] = field(default_factory=list)


class OutputsLane:
    name = "outputs"

    def __init__(self, options: OutputsOptions | None = None) -> None:
        self.options = options if options is not None else OutputsOptions()
        self._outputs: OrderedDict[tuple[str, str, int, int], _Compacted | None] = OrderedDict()
        self._messages: OrderedDict[
            tuple[int, frozenset[int]], tuple[weakref.ref[Message], Message]
        ] = OrderedDict()
        self._archived = KnownArchived()
        self._recall = recall_tool()

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        if context.mode is Mode.OFF or not any(tool == self._recall for tool in request.tools):
            return LaneOutcome(request)
        found = _Found()
        settled: dict[int, set[int]] = {}
        fresh = self.options.fresh_turns
        for index, position in settled_results(request, context.kept, fresh):
            settled.setdefault(index, set()).add(position)
        messages = [
            self._message(message, found, frozenset(settled.get(i, ())))
            for i, message in enumerate(request.messages)
        ]
        if not found.compacted:
            return LaneOutcome(request)
        writes = [
            ArchiveWrite(c.ref, c.data, context.session, f"tool output of {c.call_id}")
            for c in found.compacted
            if self._archived.new(context.session, c.ref)
        ]
        saved = sum(c.saved for c in found.compacted)
        report = {"outputs": len(found.compacted), "tokens_saved": saved}
        changed = dataclasses.replace(request, messages=messages)
        return LaneOutcome(changed, writes, report, summary=f"-{saved}t")

    def viewer(self) -> Viewer:
        """What this lane makes of a tool output as it arrives, for the state lane to price
        offering ``recall`` on before a session's first boundary (``state.bulky``): the
        tokens its view saves, found once (the lane then finds it remembered)."""

        def saving(role: Role, part: Part) -> int:
            compacted = self._compacted(role, part, settled=False)
            return compacted.saved if compacted is not None else 0

        return Viewer(saving, self.options.min_chars)

    def _message(self, message: Message, found: _Found, settled: frozenset[int]) -> Message:
        """``message`` with its bulky outputs compacted, and those at the ``settled`` places
        of its parts that are long enough at a boundary: the same rewritten object for the
        same message object, ``message`` itself when nothing in it is compacted."""
        key = (id(message), settled)
        kept = self._messages.get(key)
        if kept is not None and kept[0]() is message:
            self._messages.move_to_end(key)
            found.compacted += self._compacted_in(message, settled)
            return kept[1]
        before = len(found.compacted)
        parts = [
            self._part(part, message.role, found, i in settled)
            for i, part in enumerate(message.parts)
        ]
        if len(found.compacted) == before:
            return message
        rewritten = dataclasses.replace(message, parts=parts)
        self._messages[key] = (weakref.ref(message), rewritten)
        while len(self._messages) > MEMO_SIZE:
            self._messages.popitem(last=False)
        return rewritten

    def _compacted_in(self, message: Message, settled: frozenset[int]) -> list[_Compacted]:
        found = [
            self._compacted(message.role, part, i in settled)
            for i, part in enumerate(message.parts)
        ]
        return [c for c in found if c is not None]

    def _part(self, part: Part, role: Role, found: _Found, settled: bool) -> Part:
        compacted = self._compacted(role, part, settled)
        if compacted is None:
            return part
        found.compacted.append(compacted)
        assert isinstance(part, ToolResult)
        return dataclasses.replace(part, content=[Text(compacted.text)])

    def _compacted(self, role: Role, part: Part, settled: bool) -> _Compacted | None:
        """The compaction of a bulky text output, remembered by content; None for any other
        part, an output under ``min_chars`` (``boundary_min_chars`` where ``settled``), and
        one whose view would not save tokens."""
        if not isinstance(part, ToolResult):
            return None
        text = text_of(part)
        least = self.options.boundary_min_chars if settled else self.options.min_chars
        if text is None or len(text) < least:
            return None
        key = (role, part.call_id, len(text), hash(text))
        if key in self._outputs:
            self._outputs.move_to_end(key)
            compacted = self._outputs[key]
        else:
            compacted = self._compact(role, part, text)
            self._outputs[key] = compacted
            while len(self._outputs) > MEMO_SIZE:
                self._outputs.popitem(last=False)
        if compacted is None or (not settled and compacted.kind not in self.options.arrival):
            return None
        return compacted

    def _compact(self, role: Role, part: ToolResult, text: str) -> _Compacted | None:
        budget = self.options.budget_chars
        if len(text) < self.options.min_chars:  # a boundary's: a quarter of it
            budget = max(MIN_BUDGET, min(budget, len(text) // 4))
        view = view_of(text, budget_chars=budget)
        if view is None:
            return None
        data = canonical_span([Message(role, [part])])
        ref = ref_for(data)
        shown = redact(render(view, ref)).text
        saved = count_tokens(text) - count_tokens(shown)
        return _Compacted(shown, ref, data, saved, part.call_id, view.kind) if saved > 0 else None


LANE = LaneSpec(
    name=OutputsLane.name,
    build=lambda parts, options: OutputsLane(options),
    on=True,
    idle_off=True,
    idle_passing=True,  # it acts where recall is offered: from the first boundary on
    options=OutputsOptions,
)
"""On by default: it costs less on every workload of the benchmark, at the same score
(docs/lanes.md)."""
