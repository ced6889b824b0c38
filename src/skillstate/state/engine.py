"""The state engine: per session, Σ and its epoch in, the outbound request out; the model's
patches and the deterministic seed back into Σ.

The engine is the state lane's I/O edge: it loads from and commits to the stores, and leaves
every decision to pure functions (``boundary.decide``, ``render``, ``paper``, ``seed``).
Which requests it takes:

* ``mode`` ``off``: none (the gateway is a pass-through).
* ``hybrid``: requests that offer tools (an agent's loop). A request without tools (a title
  or summary side request) passes untouched; so does one whose system prompt differs from the
  session's procedure (a subagent sharing the session id) unless subagents are allowed.
* ``paper``: every request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from skillstate.archive.store import Archive
from skillstate.conversation import Json, Message, Request, Response, Text, Tool, ToolCall, Wire
from skillstate.economics import tokenizer
from skillstate.economics.tokenizer import count_tokens, prime
from skillstate.state.boundary import Decision, Opening, decide
from skillstate.state.bulky import Viewer, outputs_verdict, views_save
from skillstate.state.description import describe_session
from skillstate.state.diff import state_changes
from skillstate.state.envelope import (
    EnvelopeError,
    correction_note,
    parse_envelope,
    parse_json_object,
)
from skillstate.state.epoch_cache import EpochCache
from skillstate.state.epoch_record import DOC_NAME, Epoch, Span, anchor
from skillstate.state.handover import can_hand_over, handover_request
from skillstate.state.internal import PatchResult, answer_recall, answer_skill_state
from skillstate.state.merge import apply_patch
from skillstate.state.mode import Mode
from skillstate.state.paper import newest_instruction, render_paper
from skillstate.state.passing import Passing
from skillstate.state.prepared import EngineConfig, Prepared
from skillstate.state.render import SpanRef, render_hybrid, stale_nudge
from skillstate.state.reports import LastReport, hybrid_report
from skillstate.state.seed import seed_finished
from skillstate.state.subagents import another_conversation, marked
from skillstate.state.tools import (
    RECALL_TOOL,
    SKILL_STATE_TOOL,
    internal_names,
    recall_tool,
    skill_state_tool,
)
from skillstate.state.turns import newest_reply
from skillstate.storage.leases import Leases, LocalLeases
from skillstate.storage.protocols import ArchiveStore, Change, StateRecord, StateStore
from skillstate.support import jsonio
from skillstate.support.caches import SessionCache

log = logging.getLogger("skillstate.state")

LAST_REPORTS = 1024
"""Sessions whose last-request report and epoch are kept in memory (the report describes what
the gateway did, for /state, and is worth a store write on no request's path; the epoch is
read on every request of a session)."""
REPORT_BYTES = 2 * 1024 * 1024
"""What the kept reports may weigh together (``_report_weight``); one pushed out is written to
the store (``REPORT_DOC``) off the request's path, where /state finds it."""
EPOCH_BYTES = 2 * 1024 * 1024
"""What the kept epochs may weigh together (their JSON's length); one pushed out is read again
from the store, where it always is."""
REPORT_DOC = "last_report"
RECALL_OFFERED = "recall_offered"
"""The record's meta key saying from which step a session passed through is offered
``recall`` (``state.bulky``)."""


class StateEngine:
    def __init__(
        self,
        store: StateStore,
        archive: ArchiveStore,
        config: EngineConfig,
        *,
        clock: Callable[[], float] = time.time,
        kept_sessions: int = LAST_REPORTS,
        shared: bool = False,
        leases: Leases | None = None,
    ) -> None:
        """``kept_sessions``: how many sessions' last report and epoch stay in memory;
        ``shared``: other processes write to the same store (``store`` is a database several
        gateways share), so a kept epoch is checked against Σ's mark of it on every request
        (``state.epoch_cache``); ``leases``: who makes a session's boundary when two of its
        requests would (``storage.leases``; this process's own by default)."""
        self.store = store
        self.leases: Leases = leases or LocalLeases()
        self.archive = Archive(archive, clock=clock)
        self.config = config
        self._clock = clock
        self._tools: dict[str, Tool] = {
            tool.name: tool for tool in (skill_state_tool(config.schema), recall_tool())
        }
        self._counted: dict[str, int] = {}  # their definitions' tokens
        self._last: SessionCache[LastReport] = SessionCache(
            entries=kept_sessions,
            max_bytes=REPORT_BYTES,
            weigh=LastReport.weight,
            evicted=lambda session, last: self._keep_report(session, last.shown()),
        )
        self._writes: set[asyncio.Task[None]] = set()
        self._epochs = EpochCache(
            store, entries=kept_sessions, max_bytes=EPOCH_BYTES, shared=shared
        )
        # Shared, a session's steps relayed unread would be each process's to catch up on:
        # its requests are all read instead.
        self.passing = Passing(
            entries=0 if shared else kept_sessions, min_turns=config.options.min_turns
        )
        """The sessions passed through before their first boundary (``state.passing``)."""
        self.viewer: Viewer | None = None
        """What the outputs lane would make of a tool output as it arrives, where it runs:
        set by the composition root; with it, a session passed through is offered ``recall``
        as soon as compacting a bulky output pays (``state.bulky``)."""

    def _keep_report(self, session: str, report: Json) -> None:
        """A report pushed out of memory, written to the store off the request's path."""
        task = asyncio.get_running_loop().create_task(self._write_report(session, report))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _write_report(self, session: str, report: Json) -> None:
        try:
            await self.store.put_doc(session, REPORT_DOC, report)
        except Exception as error:  # a description the less, never a failed request
            log.warning("session %s: its last report was not kept (%s)", session, error)

    async def _last_report(self, session: str) -> Json | None:
        kept = self._last.get(session)
        if kept is not None:
            return kept.shown()
        await asyncio.gather(*self._writes)
        return await self.store.get_doc(session, REPORT_DOC)

    async def reset(self, session: str) -> tuple[bool, int]:
        """Forget Σ, the epoch and the archive index of ``session``: (had a state, archive
        entries forgotten)."""
        self._epochs.pop(session)
        self._last.pop(session)
        self.passing.forget(session)
        await asyncio.gather(*self._writes)  # a report pushed out is not written after the reset
        had_state = await self.store.reset(session)
        return had_state, await self.archive.forget(session)

    async def prepare(
        self, session: str, request: Request, mode: Mode, upstream: Wire
    ) -> Prepared | None:
        if mode is Mode.OFF or (mode is Mode.HYBRID and not request.tools):
            return None
        relayed = self.passing.taken(session)
        record = await self._start(
            session, request, subagents_apart=mode is Mode.HYBRID, relayed=relayed
        )
        if record is None:
            return None  # a subagent's request, not the session's: no step counted
        if mode is Mode.PAPER:
            prepared = await self._paper(session, record, request, upstream)
        else:
            prepared = await self._hybrid(session, record, request, upstream)
        self._last.put(session, LastReport.of(prepared.report, prepared.decision, prepared.epoch))
        return prepared

    async def _start(
        self, session: str, request: Request, *, subagents_apart: bool, relayed: int = 0
    ) -> StateRecord | None:
        """Fix the procedure (the system prompt) and seed Σ at the session's first request;
        count the step on every later one. Where ``relayed`` requests before it went by
        unread (``state.passing``), first finish the last of them as ``finish`` would have:
        its history is this one's up to the reply it got (the last assistant message), and
        the steps of the others are counted. With ``subagents_apart``, a subagent's request
        (``_subagent``) changes nothing and gives None. One update: the record read and the
        step counted in one trip to the store."""
        subagent = False

        def updater(current: StateRecord) -> Change | None:
            nonlocal subagent
            if subagents_apart and self._subagent(current, request):
                subagent = True
                return None
            meta = dict(current.meta)
            marked(meta, request)
            state = current.state
            if current.version == 0 and self.config.initial_state:
                state = apply_patch(self.config.schema, {}, self.config.initial_state).state
            step = current.step + relayed
            if relayed and self.config.options.seed_from_tools:
                state, step = self._caught_up(state, step, meta, request.messages)
            return current.changed(state=state, step=step + 1, meta=meta)

        record = await self.store.update(session, updater)
        return None if subagent else record

    def _caught_up(
        self, state: Json, step: int, meta: Json, messages: list[Message]
    ) -> tuple[Json, int]:
        """Σ and the step as ``finish`` would have left them after the last request relayed
        unread: the one whose history is ``messages`` up to their last assistant message."""
        earlier = messages[: max(newest_reply(messages), 0)]
        keys = meta.get("model_keys", [])
        return seed_finished(state, step, keys, earlier, self.config.schema, answered=True)

    def _subagent(self, record: StateRecord, request: Request) -> bool:
        """A subagent's request under its parent's session id (``state.subagents``)."""
        if self.config.options.allow_subagent_sessions:
            return False
        return another_conversation(record.meta, request)

    async def _hybrid(
        self, session: str, record: StateRecord, request: Request, upstream: Wire
    ) -> Prepared:
        stored_doc = await self._epochs.get(session, record)
        stored = Epoch.from_json(stored_doc) if stored_doc else None
        force = bool(record.meta.get("force_collapse"))
        await prime(request.messages)  # the decision counts them: off the event loop
        # Until its first boundary a session is passed through as it came: no internal tools,
        # no Σ (the seed still keeps Σ in the store). They arrive with the boundary that pays
        # for them, and the one cache miss they cause is priced into that boundary.
        passthrough = self.config.options.passthrough_until_boundary and stored is None
        opening = None
        if passthrough:
            (_, head), _ = tokenizer.head(request)
            opening = Opening(
                self._definition_tokens(*self._tools),
                tokenizer.system_tokens(request),
                self._hands_over(request),
                head_tokens=head,
            )
        decision = decide(
            request.messages,
            stored,
            record.state,
            self.config.options,
            force=force,
            prices=self.config.prices(request.model, upstream),
            opening=opening,
        )
        epoch = decision.epoch
        if decision.new_span is not None and decision.plan is not None:
            token = await self.leases.take(session)
            if token is None:  # another request of the session is making one: as if not due
                decision = replace(decision, plan=None, new_span=None)
            else:
                try:
                    epoch = await self._boundary(session, record, request, decision)
                finally:
                    await self.leases.give_back(session, token)
        if force:
            await self._clear_force(session)
        internal: dict[str, str] = {}
        outbound = request
        recall = passthrough and epoch is None and RECALL_OFFERED in record.meta
        if passthrough and epoch is None and not recall:
            recall = await self._offers_recall(session, request, upstream, decision)
        if epoch is not None or not passthrough:
            internal = internal_names(tool.name for tool in request.tools)
            outbound = self._render(request, record, epoch, upstream, internal)
        elif recall:  # only recall, for the outputs lane's views: no Σ before a boundary
            outbound, internal = self._with_recall(request, request)
        report = hybrid_report(decision, epoch, record, request, outbound)
        if recall:
            report["recall"] = "offered"
        prepared = Prepared(
            session, Mode.HYBRID, request, outbound, record, epoch, report, internal, upstream
        )
        prepared.decision = decision
        if passthrough and epoch is not None and self._hands_over(request):
            prepared.handover = handover_request(request, record.state, self.config.schema)
            report["handover"] = "asked"
        if passthrough and epoch is None and not force and not recall:
            self.passing.kept(session, record.step)
        return prepared

    async def _paper(
        self, session: str, record: StateRecord, request: Request, upstream: Wire
    ) -> Prepared:
        """Paper mode's request: (P, Σ, O), offering ``recall`` from the first observation
        that holds a tool output the outputs lane would make a view of (the archive then has
        something to fetch; before, its definition would only weigh on every request)."""
        outbound = render_paper(
            request,
            procedure=[Text(t) for t in record.meta.get("procedure", [])],
            state=record.state,
            schema=self.config.schema,
            task=newest_instruction(request.messages),
            cache_markers=upstream is Wire.MESSAGES,
        )
        internal: dict[str, str] = {}
        offered = RECALL_OFFERED in record.meta
        if offered or (self.viewer is not None and views_save(request, self.viewer) > 0):
            if not offered:
                await self._keep_recall_offered(session)
            outbound, internal = self._with_recall(outbound, request)
        report: Json = {"mode": "paper", "step": record.step}
        return Prepared(session, Mode.PAPER, request, outbound, record, None, report, internal)

    async def _keep_recall_offered(self, session: str) -> None:
        """Say in the session's record that ``recall`` is offered from now on (its prefix stays
        the same on every later request)."""

        def updater(current: StateRecord) -> Change | None:
            if RECALL_OFFERED in current.meta:
                return None
            return current.changed(meta={**current.meta, RECALL_OFFERED: current.step})

        await self.store.update(session, updater)
        log.info("session %s: recall offered, for its tool outputs' views", session)

    async def _offers_recall(
        self, session: str, request: Request, upstream: Wire, decision: Decision
    ) -> bool:
        """Whether this request of a session passed through starts offering ``recall``: the
        tool outputs it adds since the model's newest reply would be views that save more
        than the cache miss costs (``state.bulky``). Kept in the session's record, so that
        every later request offers it too (its prefix stays the same)."""
        if self.viewer is None:
            return False
        prices = self.config.prices(request.model, upstream)
        turns = len(decision.turns)
        verdict = outputs_verdict(
            request, self.viewer, self._definition_tokens(RECALL_TOOL), turns, prices
        )
        if verdict is None or not verdict.starts:
            return False
        await self._keep_recall_offered(session)
        return True

    def _with_recall(self, outbound: Request, client: Request) -> tuple[Request, dict[str, str]]:
        """``outbound`` offering ``recall`` alone, under a name none of ``client``'s tools has,
        and the internal tools so offered: what paper mode offers (Σ is patched through the
        envelope), and hybrid mode before its first boundary once outputs are compacted
        (``state.bulky``); the archive holds what a lane took out of the observation (the
        outputs lane's views)."""
        names = internal_names(tool.name for tool in client.tools)
        internal = {name: tool for name, tool in names.items() if tool == RECALL_TOOL}
        offered = [replace(self._tools[tool], name=name) for name, tool in internal.items()]
        return replace(outbound, tools=[*outbound.tools, *offered]), internal

    def _hands_over(self, request: Request) -> bool:
        return self.config.options.handover and can_hand_over(request)

    async def hand_over(self, prepared: Prepared, response: Response | None) -> Request:
        """The handover round's reply (None when the round failed): its patch applied to Σ
        and the epoch's snapshot, the boundary request rendered with it. A reply that holds
        no patch, or one Σ refuses, leaves Σ as it was (``state.handover``)."""
        epoch = prepared.epoch
        prepared.handover = None
        if epoch is None:
            return prepared.request
        verdict = "failed"
        if response is not None:
            verdict = await self._apply_handover(prepared.session, response)
        prepared.report["handover"] = verdict
        if verdict != "applied":
            log.info("session %s: the handover round was not used (%s)", prepared.session, verdict)
            return prepared.request
        record = await self.store.load(prepared.session)
        epoch = replace(epoch, snapshot=record.state)
        await self._epochs.put(prepared.session, epoch.to_json())
        prepared.record, prepared.epoch = record, epoch
        prepared.request = self._render(
            prepared.client, record, epoch, prepared.upstream, prepared.internal
        )
        prepared.report["outbound_messages"] = len(prepared.request.messages)
        return prepared.request

    async def _apply_handover(self, session: str, response: Response) -> str:
        text = "".join(p.text for p in response.message.parts if isinstance(p, Text))
        patch = parse_json_object(text)  # the whole reply, or its last ```json block
        if isinstance(patch, EnvelopeError):
            return f"no patch: {patch.reason}"
        arguments = jsonio.dumps_str({"patch": patch})
        result = await answer_skill_state(self.store, self.config.schema, session, arguments)
        return "applied" if result.applied else "refused: " + " ".join(result.text.split())[:200]

    def _definition_tokens(self, *tools: str) -> int:
        """Tokens the definitions of the internal ``tools`` add to a request (all of them:
        about 500), each counted once the tokenizer is loaded."""
        for name in tools:
            if name not in self._counted:
                t = self._tools[name]
                text = jsonio.dumps_str([t.name, t.description, t.parameters])
                self._counted[name] = count_tokens(text)
        return sum(self._counted[name] for name in tools)

    async def _boundary(
        self, session: str, record: StateRecord, request: Request, decision: Decision
    ) -> Epoch:
        assert decision.plan is not None and decision.new_span is not None
        span = decision.new_span
        turns = [t for t in decision.turns if t.start >= span.start and t.end <= span.stop]
        summary = f"{len(turns)} turns, {sum(t.tokens for t in turns):,} tokens"
        if self.config.options.track_tools:
            summary += _tools_ran(request.messages[span.start : span.stop])
        entry = await self.archive.keep(
            session,
            request.messages[span.start : span.stop],
            first_turn=span.start,
            last_turn=span.stop - 1,
            summary=summary,
        )
        ref = entry.ref
        previous = decision.epoch
        spans = (previous.spans if previous else ()) + (
            Span(ref, span.start, span.stop - 1, len(turns), summary),
        )
        cut = decision.plan.collapsed.stop
        epoch = Epoch(
            number=(previous.number if previous else 0) + 1,
            head=decision.plan.head.stop,
            cut=cut,
            anchor=anchor(request.messages[:cut]),
            snapshot=record.state,
            spans=spans,
            started_step=record.step,
            kept_until=len(request.messages),
        )
        await self._epochs.put(session, epoch.to_json())
        log.info(
            "session %s: epoch %d collapses messages %d-%d", session, epoch.number, *_ends(span)
        )
        return epoch

    async def _clear_force(self, session: str) -> None:
        def updater(current: StateRecord) -> Change | None:
            if not current.meta.get("force_collapse"):
                return None
            meta = {k: v for k, v in current.meta.items() if k != "force_collapse"}
            return current.changed(meta=meta)

        await self.store.update(session, updater)

    def _render(
        self,
        request: Request,
        record: StateRecord,
        epoch: Epoch | None,
        upstream: Wire,
        internal: dict[str, str],
    ) -> Request:
        n = len(request.messages)
        offered = [replace(self._tools[tool], name=name) for name, tool in internal.items()]
        nudge = self._nudge(record, next(iter(internal)))
        if epoch is None:
            head, tail, snapshot, spans = range(0), range(n), record.state, []
            changes: Json = {}
        else:
            head, tail, snapshot = range(epoch.head), range(epoch.cut, n), epoch.snapshot
            spans = [
                SpanRef(s.ref, s.first + 1, s.last + 1, s.turns, s.summary) for s in epoch.spans
            ]
            changes = state_changes(epoch.snapshot, record.state)
        return render_hybrid(
            request,
            head=head,
            tail=tail,
            snapshot=snapshot,
            spans=spans,
            changes=changes,
            nudge=nudge,
            schema=self.config.schema,
            internal_tools=offered,
            cache_markers=upstream is Wire.MESSAGES,
        )

    def _nudge(self, record: StateRecord, skill_state: str) -> str | None:
        options = self.config.options
        if not options.nudge_when_stale:
            return None
        idle = record.step - int(record.meta.get("last_patch_step", 0))
        return stale_nudge(idle, skill_state) if idle >= options.stale_after else None

    # --- the reply -------------------------------------------------------------------------

    async def answer(self, prepared: Prepared, call: ToolCall) -> str:
        """The result of an internal tool call the model made."""
        if prepared.internal.get(call.name, call.name) == SKILL_STATE_TOOL:
            result: PatchResult = await answer_skill_state(
                self.store, self.config.schema, prepared.session, call.arguments
            )
            if not result.applied:  # the model reads why; the verdict tells the client
                prepared.rejected = result.text
            return result.text
        return await answer_recall(self.archive, prepared.session, call.arguments)

    async def check_paper(self, prepared: Prepared, response: Response) -> str | None:
        """Paper mode: apply the reply's envelope. A correction note when a retry can fix it
        (not an envelope, a patch of the wrong shape); None when it was applied, or when it was
        refused for its size (asking again would only cost another call: ``rejected`` says
        why, and nothing is retried)."""
        text = "".join(p.text for p in response.message.parts if isinstance(p, Text))
        envelope = parse_envelope(text)
        if isinstance(envelope, EnvelopeError):
            prepared.rejected = envelope.reason
            return correction_note(envelope)
        arguments = jsonio.dumps_str({"patch": envelope.state_patch})
        result = await answer_skill_state(
            self.store, self.config.schema, prepared.session, arguments
        )
        prepared.rejected = None if result.applied else result.text
        if result.applied or result.oversize:
            return None
        return result.text

    async def finish(self, prepared: Prepared, response: Response | None) -> None:
        """Hybrid mode: fill holes in Σ from the tool calls of the window (never overwriting
        what the model wrote), and keep the step (``seed.seed_finished``)."""
        if prepared.mode is not Mode.HYBRID or not self.config.options.seed_from_tools:
            return
        messages = prepared.client.messages
        answered = response is not None and response.message.role == "assistant"
        start = prepared.epoch.cut if prepared.epoch else 0
        schema = self.config.schema

        def updater(current: StateRecord) -> Change | None:
            keys = current.meta.get("model_keys", [])
            seeded, step = seed_finished(
                current.state, current.step, keys, messages, schema, start=start, answered=answered
            )
            if seeded == current.state and step == current.step:
                return None
            return current.changed(state=seeded, step=step)

        await self.store.update(prepared.session, updater)

    async def request_collapse(self, session: str) -> None:
        self.passing.hold(session)

        def updater(current: StateRecord) -> Change:
            return current.changed(meta={**current.meta, "force_collapse": True})

        await self.store.update(session, updater)

    async def describe(self, session: str) -> Json | None:
        """What the engine keeps about ``session`` (``description.describe_session`` lists
        it), or None when the session has no committed state (never seen, or reset)."""
        infos = await self.store.list_sessions()
        info = next((i for i in infos if i.session == session), None)
        if info is None:
            return None
        record = await self.store.load(session)
        epoch = await self.store.get_doc(session, DOC_NAME)
        last = await self._last_report(session)
        entries = await self.archive.entries(session)
        relayed = self.passing.relayed_since(session)
        return describe_session(info, record, epoch, last, entries, relayed)


def _tools_ran(messages: list[Message]) -> str:
    """``; tools: read_file x12, exec_command x3`` for the calls in a collapsed span, most
    used first, so the Σ message says what ran in what it replaced."""
    counts = Counter(p.name for m in messages for p in m.parts if isinstance(p, ToolCall))
    if not counts:
        return ""
    shown = ", ".join(f"{name} x{n}" for name, n in counts.most_common(6))
    more = len(counts) - 6
    return f"; tools: {shown}" + (f" and {more} more" if more > 0 else "")


def _ends(span: range) -> tuple[int, int]:
    return span.start + 1, span.stop
