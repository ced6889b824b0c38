"""The audit log: an append-only record of the admin actions taken on a gateway (a session reset
or collapsed; later, keys created and revoked, budgets changed, the data key rotated), each
with who took it and when.

Where it is kept: beside Σ. With a shared store (``Stores.shared``) in PostgreSQL's
``skillstate_audit``, so that every instance's actions are in one log; else in the ``audit``
table of the SQLite file under the data directory; without either, in memory. Both tables refuse
UPDATE and DELETE with a trigger (``storage.sqlite`` and ``storage.postgres`` make them in their
migrations): what was written stays as written.

Contract of ``AuditLog.record``: it never fails the admin action it records. A write the store
refuses is logged, the entry is kept in memory (``degraded`` says so, ``entries`` still shows
it), and the next ``record`` writes the kept entries first, in their order.

Contract of ``entries``: newest first (``when``, then the order written), ``since <= when <
until``, ``action`` exact, at most ``limit``.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from skillstate.conversation import Json
from skillstate.storage.postgres import PostgresDatabase
from skillstate.storage.sqlite import SQLiteDatabase, transaction
from skillstate.storage.stores import Stores
from skillstate.support import jsonio

log = logging.getLogger("skillstate.audit")

DEFAULT_LIMIT = 100
KEPT_MAX = 10_000
"""Entries kept in memory while the store refuses them: admin actions are rare; past this the
oldest kept are dropped (and the log says so)."""


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One admin action: ``when`` (seconds since the epoch), ``who`` (the credential, in short:
    ``token``, ``loopback``, ``key:<id>``), ``action`` (``session.reset``), ``target`` (what
    it acted on: a session id) and ``detail`` (a small JSON object: the client's address)."""

    when: float
    who: str
    action: str
    target: str = ""
    detail: Json = field(default_factory=dict)

    def to_json(self) -> Json:
        return {
            "when": self.when,
            "who": self.who,
            "action": self.action,
            "target": self.target,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """Which entries ``entries`` returns: ``since <= when < until``, ``action`` exact (None:
    any), at most ``limit``, newest first."""

    since: float | None = None
    until: float | None = None
    action: str | None = None
    limit: int = DEFAULT_LIMIT

    def matches(self, entry: AuditEntry) -> bool:
        return (
            (self.since is None or entry.when >= self.since)
            and (self.until is None or entry.when < self.until)
            and (self.action is None or entry.action == self.action)
        )


class AuditStore(Protocol):
    """Where the entries are kept: appended in order, never changed."""

    async def append(self, entries: Sequence[AuditEntry]) -> None: ...

    async def entries(self, query: AuditQuery) -> list[AuditEntry]: ...


class MemoryAudit:
    """``AuditStore`` in this process's memory (no data directory, or the tests)."""

    def __init__(self) -> None:
        self._entries: list[AuditEntry] = []

    async def append(self, entries: Sequence[AuditEntry]) -> None:
        self._entries.extend(entries)

    async def entries(self, query: AuditQuery) -> list[AuditEntry]:
        return newest_first([e for e in self._entries if query.matches(e)], query.limit)


class SQLiteAudit:
    """``AuditStore`` in the ``audit`` table of a ``SQLiteDatabase`` (schema version 2)."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    async def append(self, entries: Sequence[AuditEntry]) -> None:
        rows = [_row(entry) for entry in entries]

        def insert(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.executemany(
                    "INSERT INTO audit (at, who, action, target, detail) VALUES (?, ?, ?, ?, ?)",
                    rows,
                )

        await self._db.run(insert)

    async def entries(self, query: AuditQuery) -> list[AuditEntry]:
        return await self._db.run(partial(select_sqlite, query))


def select_sqlite(query: AuditQuery, conn: sqlite3.Connection) -> list[AuditEntry]:
    """The entries ``query`` asks for from the ``audit`` table on ``conn`` (the gateway's
    connection, or a read-only one: ``skillstate audit``)."""
    where, params = _where(query, "?")
    rows = conn.execute(
        f"SELECT at, who, action, target, detail FROM audit{where}"
        " ORDER BY at DESC, id DESC LIMIT ?",
        (*params, query.limit),
    ).fetchall()
    return [_entry(row) for row in rows]


class PostgresAudit:
    """``AuditStore`` in ``skillstate_audit`` (schema version 3): one log for every instance on
    the database. A database not reached at start is tried again by each write."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def append(self, entries: Sequence[AuditEntry]) -> None:
        await self._db.ensure()
        await self._db.pool.executemany(
            "INSERT INTO skillstate_audit (at, who, action, target, detail)"
            " VALUES ($1, $2, $3, $4, $5)",
            [_row(entry) for entry in entries],
        )

    async def entries(self, query: AuditQuery) -> list[AuditEntry]:
        await self._db.ensure()
        where, params = _where(query, "$")
        rows = await self._db.pool.fetch(
            f"SELECT at, who, action, target, detail FROM skillstate_audit{where}"
            f" ORDER BY at DESC, id DESC LIMIT ${len(params) + 1}",
            *params,
            query.limit,
        )
        return [_entry(tuple(row)) for row in rows]


def _where(query: AuditQuery, mark: str) -> tuple[str, list[object]]:
    """The ``WHERE`` clause of ``query`` with ``?`` (SQLite) or ``$n`` (PostgreSQL) marks."""
    found: list[tuple[str, object]] = []
    if query.since is not None:
        found.append(("at >= ", query.since))
    if query.until is not None:
        found.append(("at < ", query.until))
    if query.action is not None:
        found.append(("action = ", query.action))
    marks = [mark if mark == "?" else f"${n}" for n in range(1, len(found) + 1)]
    clauses = [f"{test}{m}" for (test, _), m in zip(found, marks, strict=True)]
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), [v for _, v in found]


def _row(entry: AuditEntry) -> tuple[float, str, str, str, str]:
    return (entry.when, entry.who, entry.action, entry.target, jsonio.dumps_str(entry.detail))


def _entry(row: Sequence[object]) -> AuditEntry:
    when, who, action, target, detail = row
    decoded = jsonio.loads(str(detail))
    return AuditEntry(
        float(str(when)),
        str(who),
        str(action),
        str(target),
        decoded if isinstance(decoded, dict) else {},
    )


def newest_first(entries: Sequence[AuditEntry], limit: int) -> list[AuditEntry]:
    """``entries`` (in the order written) newest first, at most ``limit``: ``sorted`` is
    stable, so entries of one second stay newest written first."""
    return sorted(reversed(entries), key=lambda e: e.when, reverse=True)[: max(limit, 0)]


class AuditLog:
    """The gateway's audit log on one ``AuditStore``: ``record`` an action, read ``entries``."""

    def __init__(
        self, store: AuditStore, *, kind: str = "memory", clock: Callable[[], float] = time.time
    ) -> None:
        self._store = store
        self.kind = kind
        """``postgresql``, ``sqlite`` or ``memory``: where the entries are written."""
        self._clock = clock
        self._kept: list[AuditEntry] = []
        self.degraded: str | None = None
        """Why entries are kept in memory (the store refused the last write), or None."""

    async def record(
        self, who: str, action: str, target: str = "", detail: Json | None = None
    ) -> AuditEntry:
        """Append one entry, now. Never raises for the store: see the module's contract."""
        entry = AuditEntry(self._clock(), who, action, target, dict(detail or {}))
        waiting = [*self._kept, entry]
        try:
            await self._store.append(waiting)
        except Exception as error:
            if self.degraded is None:
                log.warning("the audit log cannot be written (%s): kept in memory", error)
            self.degraded = f"the audit log cannot be written ({error}): kept in memory"
            self._kept = waiting[-KEPT_MAX:]
            if len(waiting) > KEPT_MAX:
                log.warning("the audit log dropped its oldest unwritten entry")
        else:
            if self.degraded is not None:
                log.info("the audit log is written again (%d kept entries)", len(waiting) - 1)
            self._kept = []
            self.degraded = None
        return entry

    async def entries(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        action: str | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> list[AuditEntry]:
        """The entries asked for, newest first: the store's and those it has not taken yet.
        A store that cannot be read gives only the latter (and the log says why)."""
        query = AuditQuery(since, until, action, limit)
        try:
            stored = await self._store.entries(query)
        except Exception as error:
            log.warning("the audit log cannot be read (%s): only what memory holds", error)
            stored = []
        kept = newest_first([e for e in self._kept if query.matches(e)], limit)
        return sorted([*kept, *stored], key=lambda e: e.when, reverse=True)[: max(limit, 0)]


def open_audit(stores: Stores, *, clock: Callable[[], float] = time.time) -> AuditLog:
    """The audit log beside ``stores``: in the shared database where there is one, else in the
    SQLite file under the data directory, else in memory."""
    if stores.shared is not None:
        return AuditLog(PostgresAudit(stores.shared), kind="postgresql", clock=clock)
    if stores.database is not None:
        return AuditLog(SQLiteAudit(stores.database), kind="sqlite", clock=clock)
    return AuditLog(MemoryAudit(), clock=clock)
