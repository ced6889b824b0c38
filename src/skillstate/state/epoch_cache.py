"""The epochs of the sessions this process serves, kept in memory between requests.

A process that is the only writer of its sessions' epochs (one gateway on its own store)
keeps each epoch as it writes it and reads the store only for a session it has not kept.

Where several gateways write one store (``shared``), an epoch kept here may be stale. So
every write of an epoch also writes its mark (``mark``: a digest of its JSON) into the
session's Σ meta (``EPOCH_MARK``), which the engine reads on every request anyway: a kept epoch
is used while its mark is the record's, and read again from the store once it is not. The
epoch is written before its mark, so a record that names a mark always finds that epoch (or a
later one) in the store; between the two writes another gateway still renders the epoch before,
as it would have a moment earlier. A session whose record has no mark (its epoch written by
an older gateway) is read from the store on each request until its next boundary.
"""

from __future__ import annotations

import hashlib

from skillstate.conversation import Json
from skillstate.state.epoch_record import DOC_NAME
from skillstate.storage.protocols import Change, StateRecord, StateStore
from skillstate.support import jsonio
from skillstate.support.caches import SessionCache, compact

EPOCH_MARK = "epoch_mark"
"""The meta key of the mark of the session's current epoch ("" or absent: none)."""
_Kept = tuple[str, bytes]


def mark(doc: Json | None) -> str:
    """The mark of an epoch document ("" for none): 16 hex digits of its JSON's BLAKE2b."""
    if not doc:
        return ""
    return hashlib.blake2b(jsonio.dumps(doc), digest_size=8).hexdigest()


class EpochCache:
    """The epoch documents of at most ``entries`` sessions (``max_bytes`` of their JSON)."""

    def __init__(self, store: StateStore, *, entries: int, max_bytes: int, shared: bool) -> None:
        self._store = store
        self._shared = shared
        self._kept: SessionCache[_Kept] = SessionCache(
            entries=entries, max_bytes=max_bytes, weigh=lambda kept: len(kept[1])
        )

    async def get(self, session: str, record: StateRecord) -> Json | None:
        """The session's epoch document (None: no epoch yet), ``record`` being its Σ as read
        for this request."""
        kept = self._kept.get(session)
        if kept is not None and (not self._shared or kept[0] == record.meta.get(EPOCH_MARK, "")):
            return jsonio.loads(kept[1]) or None
        doc = await self._store.get_doc(session, DOC_NAME)
        self._keep(session, doc)
        return doc

    async def put(self, session: str, doc: Json) -> None:
        """Write the session's new epoch (and, shared, its mark into Σ's meta)."""
        await self._store.put_doc(session, DOC_NAME, doc)
        self._keep(session, doc)
        if self._shared:
            said = mark(doc)

            def marked(current: StateRecord) -> Change | None:
                if current.meta.get(EPOCH_MARK) == said:
                    return None
                return current.changed(meta={**current.meta, EPOCH_MARK: said})

            await self._store.update(session, marked)

    def pop(self, session: str) -> None:
        self._kept.pop(session)

    def _keep(self, session: str, doc: Json | None) -> None:
        """Kept as its JSON, in a buffer of its own length: parsed, a document costs several
        times its JSON's bytes (what the bound counts), and it is parsed once a request anyway
        (``Epoch.from_json``)."""
        self._kept.put(session, (mark(doc), compact(jsonio.dumps({} if doc is None else doc))))
