"""The archive of collapsed spans: what the state engine writes and ``recall`` reads.

A span is kept as its canonical bytes (``hashing``) under its content-addressed ref, so the
same turns archived twice are stored once, and what comes back is checked against the ref
before it is trusted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from skillstate.archive.hashing import canonical_span, is_ref, read_span, ref_for
from skillstate.archive.render import span_text
from skillstate.archive.search import page, search
from skillstate.archive.serialize import SpanFormatError
from skillstate.conversation import Message
from skillstate.storage.protocols import ArchiveEntry, ArchiveStore

log = logging.getLogger("skillstate.archive")

#: Characters of one ``recall`` answer (about 4,000 tokens for a page, 1,000 for a search).
PAGE_CHARS = 16000
SEARCH_CHARS = 4000


class Archive:
    """Archived spans over an ``ArchiveStore``; ``clock`` stamps index entries."""

    def __init__(self, store: ArchiveStore, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock

    async def keep(
        self,
        session: str,
        messages: Sequence[Message],
        *,
        first_turn: int,
        last_turn: int,
        summary: str = "",
    ) -> ArchiveEntry:
        """Archive ``messages`` (the session's turns ``first_turn``..``last_turn``) and index
        them; the entry names the ref to put in the Σ message. Raises when the store cannot
        keep them, so that nothing is collapsed that was not archived (invariant 4)."""
        data = canonical_span(messages)
        ref = ref_for(data)
        await self._store.put(ref, data)
        entry = ArchiveEntry(session, ref, first_turn, last_turn, summary, len(data), self._clock())
        await self._store.add_entry(entry)
        return entry

    async def put(self, session: str, ref: str, data: bytes, summary: str = "") -> ArchiveEntry:
        """Keep ``data``, the canonical bytes of a span a lane took out of a request, under
        its ``ref`` in ``session``'s index (no turn numbers: the span is content, not turns).
        Raises on a ``ref`` that is not ``data``'s, or when the store cannot keep it, so that
        nothing is compacted that was not archived (invariant 4)."""
        if ref_for(data) != ref:
            raise ValueError(f"{ref} is not the ref of the data given for it")
        await self._store.put(ref, data)
        entry = ArchiveEntry(session, ref, -1, -1, summary, len(data), self._clock())
        await self._store.add_entry(entry)
        return entry

    async def span(self, ref: str) -> list[Message] | None:
        """The exact messages archived under ``ref``; None when unknown, expired or damaged."""
        if not is_ref(ref):
            return None
        data = await self._store.get(ref)
        if data is None:
            return None
        if ref_for(data) != ref:
            log.warning("archived span %s does not match its ref; ignoring it", ref)
            return None
        try:
            return read_span(data)
        except SpanFormatError as error:
            log.warning("archived span %s is unreadable: %s", ref, error)
            return None

    async def text(self, ref: str) -> str | None:
        """The reading copy of the span under ``ref`` (``span_text``), what ``recall`` pages
        and searches; None when unknown, expired or damaged. Reading it is a use."""
        messages = await self.span(ref)
        return None if messages is None else span_text(messages)

    async def entries(self, session: str) -> list[ArchiveEntry]:
        return await self._store.entries(session)

    async def holders(self, ref: str) -> list[str]:
        """The sessions whose index names ``ref``."""
        return await self._store.holders(ref)

    async def forget(self, session: str) -> int:
        """Drop the session's index entries (a reset); the spans stay until evicted, since
        another session may share one. How many entries were dropped."""
        return await self._store.forget(session)

    async def recall(
        self, ref: str, query: str | None = None, *, context: int = 2, offset: int = 0
    ) -> str:
        """The ``recall`` tool's answer: the span's text a page at a time from ``offset``, or,
        with a query, its matching lines with ``context`` lines around them."""
        if not is_ref(ref):
            return f"{ref[:80]!r} is not an archive ref (they look like ar_ and 24 hex digits)."
        messages = await self.span(ref)
        if messages is None:
            return f"No archived span {ref}: it is unknown, or expired from the archive."
        text = span_text(messages)
        if query is None or not query.strip():
            return page(text, max(0, offset), PAGE_CHARS)
        return search(text, query, context=max(0, context), limit=SEARCH_CHARS).render()
