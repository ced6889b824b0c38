"""Answering the internal tools: ``skill_state`` patches Σ, ``recall`` reads the archive.

Both return the text the gateway sends back to the model as the tool's result. Neither ever
raises for what the model sent: a bad call gets a result saying what was wrong, so the model
can correct itself on the next round.
"""

from __future__ import annotations

from dataclasses import dataclass

from skillstate.archive.render import span_text
from skillstate.archive.search import page, search
from skillstate.archive.store import Archive
from skillstate.state.merge import PatchOutcome, apply_patch
from skillstate.state.schema import StateSchema
from skillstate.state.tools import (
    RecallByQuery,
    RecallByRef,
    ToolCallError,
    parse_recall_call,
    parse_skill_state_call,
)
from skillstate.storage.protocols import (
    ArchiveEntry,
    Change,
    StateRecord,
    StateStore,
)

RECALL_LIMIT = 16_000
"""The most characters one recall answer holds; a longer span is paged."""


@dataclass(slots=True)
class PatchResult:
    text: str
    applied: bool
    record: StateRecord | None = None
    oversize: bool = False
    """Rejected for size: a correction note asking to send it again cannot fix it."""


async def answer_skill_state(
    store: StateStore, schema: StateSchema, session: str, arguments: str
) -> PatchResult:
    patch = parse_skill_state_call(arguments)
    if isinstance(patch, ToolCallError):
        return PatchResult(f"Patch refused: {patch.reason}. The state is unchanged.", False)
    outcome_box: list[PatchOutcome] = []

    def updater(record: StateRecord) -> Change | None:
        outcome = apply_patch(schema, record.state, patch)
        outcome_box[:] = [outcome]
        if not outcome.accepted:
            return None
        written = sorted({*record.meta.get("model_keys", []), *patch})
        meta = {**record.meta, "last_patch_step": record.step, "model_keys": written}
        return record.changed(state=outcome.state, meta=meta)

    record = await store.update(session, updater)
    outcome = outcome_box[0]
    reasons = "; ".join(outcome.reasons)
    if not outcome.accepted:
        text = f"Patch rejected, the state is unchanged: {reasons}"
        return PatchResult(text, False, record, oversize=outcome.oversize)
    text = f"State updated (version {record.version})."
    if reasons:
        text += f" Note: {reasons}"
    return PatchResult(text, True, record)


async def answer_recall(archive: Archive, session: str, arguments: str) -> str:
    asked = parse_recall_call(arguments)
    if isinstance(asked, ToolCallError):
        return f"Recall refused: {asked.reason}"
    entries = await archive.entries(session)
    if isinstance(asked, RecallByRef):
        entry = next((e for e in entries if e.ref == asked.ref), None)
        if entry is None:
            known = ", ".join(e.ref for e in entries) or "none yet"
            return f"No archived span {asked.ref!r} in this session (refs: {known})."
        text = await _span(archive, entry.ref, entry.first_turn)
        if text is None:
            return "That span is no longer kept."
        return page(text, asked.offset, RECALL_LIMIT)
    return await _search(archive, entries, asked)


async def _span(archive: Archive, ref: str, first: int) -> str | None:
    messages = await archive.span(ref)
    return None if messages is None else span_text(messages, first_turn=first + 1)


async def _search(archive: Archive, entries: list[ArchiveEntry], asked: RecallByQuery) -> str:
    answers: list[str] = []
    for entry in entries:
        text = await _span(archive, entry.ref, entry.first_turn)
        if text is None:
            continue
        found = search(text, asked.query, context=asked.context)
        if found.excerpts:
            answers.append(f"In {entry.ref}:\n{found.render()}")
    if not answers:
        return f"No archived line matches {asked.query!r}."
    return page("\n\n".join(answers), 0, RECALL_LIMIT)
