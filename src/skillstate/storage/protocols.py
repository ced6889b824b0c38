"""What the gateway asks of its stores: small async protocols, and the records they pass.

Two stores, each with an in-memory twin and a SQLite backend:

* ``StateStore`` keeps, per session, the state Σ with a version that grows by one on every
  commit, the engine's step counter and a small ``meta`` object beside it, plus named JSON
  documents (the epoch snapshot) that are not versioned.
* ``ArchiveStore`` keeps archived spans as opaque bytes under their content-addressed ref, and
  an index saying which session archived which ref for which turns.

Concurrency: ``commit`` is optimistic; it names the version it read and fails with
``VersionConflict`` if another commit came first. ``update`` is the loop every caller wants:
read, compute, commit, and on a conflict read again and recompute, so two requests of one
session never lose each other's patch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from skillstate.conversation import Json

#: Safety bounds, well above what the state engine allows, so a bug cannot fill the disk.
MAX_SESSION_CHARS = 512
MAX_STATE_BYTES = 8 * 1024 * 1024
MAX_DOC_BYTES = 32 * 1024 * 1024


class VersionConflict(Exception):
    """A commit named a version that is no longer the session's current one."""

    def __init__(self, session: str, expected: int, current: int) -> None:
        super().__init__(f"session {session!r}: expected version {expected}, found {current}")
        self.session = session
        self.expected = expected
        self.current = current


class StoreLimitError(ValueError):
    """A value past the store's bounds (a session id, a state, a document, a blob). The
    caller's fault, not the store's: it is never a reason to fall back to memory."""


@dataclass(frozen=True, slots=True)
class Change:
    """What a commit writes: the new Σ, the step counter, and ``meta`` (replaced whole)."""

    state: Json
    step: int
    meta: Json = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StateRecord:
    """A session's Σ as stored. ``version`` 0 means nothing was ever committed (or, after a
    reset, the version the reset reached, so that a commit read before it conflicts)."""

    state: Json
    version: int
    step: int = 0
    meta: Json = field(default_factory=dict)

    def changed(
        self, state: Json | None = None, step: int | None = None, meta: Json | None = None
    ) -> Change:
        """A ``Change`` that keeps whatever is not given."""
        return Change(
            self.state if state is None else state,
            self.step if step is None else step,
            self.meta if meta is None else meta,
        )


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One line of ``list_sessions``: sizes are those of the stored JSON, in bytes; times are
    the store clock's seconds."""

    session: str
    version: int
    step: int
    state_bytes: int
    meta_bytes: int
    created: float
    last_seen: float


@dataclass(frozen=True, slots=True)
class ArchiveEntry:
    """``session`` archived the span ``ref`` holding its turns ``first_turn``..``last_turn``
    (inclusive); ``size`` is the span's canonical size in bytes."""

    session: str
    ref: str
    first_turn: int
    last_turn: int
    summary: str
    size: int
    created: float


#: Computes a session's next state from its current record; None commits nothing.
Updater = Callable[[StateRecord], Change | None]


class StateStore(Protocol):
    async def load(self, session: str) -> StateRecord:
        """The session's record; an unknown session is ``StateRecord({}, 0)``."""
        ...

    async def commit(self, session: str, change: Change, *, expected_version: int) -> StateRecord:
        """Write ``change`` as version ``expected_version + 1``, or raise VersionConflict."""
        ...

    async def update(self, session: str, updater: Updater) -> StateRecord:
        """Commit ``updater(current record)``, recomputing it on every conflict; the record
        committed (or the current one, when ``updater`` returned None)."""
        ...

    async def touch(self, session: str) -> None:
        """Mark an existing session as seen now, without a new version."""
        ...

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session with a committed state, most recently seen first."""
        ...

    async def reset(self, session: str) -> bool:
        """Forget the session's Σ and documents; whether it had a state. The version is kept
        (and bumped), so versions of one session only ever grow."""
        ...

    async def get_doc(self, session: str, name: str) -> Json | None: ...

    async def put_doc(self, session: str, name: str, doc: Json) -> None:
        """Store a named JSON document beside the session's Σ (last write wins)."""
        ...

    async def close(self) -> None: ...


class ArchiveStore(Protocol):
    async def put(self, ref: str, data: bytes) -> None:
        """Keep ``data`` under ``ref``; putting the same ref again changes nothing."""
        ...

    async def get(self, ref: str) -> bytes | None:
        """The bytes under ``ref``, or None when unknown or evicted."""
        ...

    async def add_entry(self, entry: ArchiveEntry) -> None:
        """Index an archived span; adding the same entry twice keeps one."""
        ...

    async def entries(self, session: str) -> list[ArchiveEntry]:
        """The session's index entries, in turn order."""
        ...

    async def forget(self, session: str) -> int:
        """Drop the session's index entries (blobs stay until evicted); how many."""
        ...

    async def holders(self, ref: str) -> list[str]:
        """The sessions whose index names ``ref`` (whose it is to read: a tenant's ref is
        one of its own sessions')."""
        ...

    async def close(self) -> None: ...
