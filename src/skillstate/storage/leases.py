"""Leases on a session's boundary: the one step of a session's request that must not run in two
places at once. Two requests of one session that both decide to start a boundary (a client
that retried while its first try was still running, on another instance) would each write an
epoch of the same number with a different cut, and the session's prefix would change twice; so
the request that takes the lease makes the boundary, and the other renders with the epoch it
had, as if its boundary had not been due yet.

A lease is held for at most ``LEASE_S`` seconds (a process that dies holding one does not
block the session for longer) and given back by its holder only (a token says whose it is).

``LocalLeases`` are one process's; ``RedisLeases`` every gateway's on one Redis (``SET NX PX``
to take, a compare-and-delete script to give back); ``SqliteLeases`` those of the processes of
one machine sharing a SQLite file (``--workers`` without Redis: a table of the file, one
``BEGIN IMMEDIATE`` transaction to take). A Redis or a file that fails leaves each process its
own leases, said once in the log, until it answers again.
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
import time
from collections.abc import Callable
from typing import Any, Protocol

from skillstate.storage.sqlite import SQLiteDatabase, transaction

log = logging.getLogger("skillstate.storage")

LEASE_S = 30.0
"""The longest a boundary's lease is held."""
KEY_PREFIX = "skillstate:lease:"
_GIVE_BACK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class Leases(Protocol):
    async def take(self, session: str) -> str | None:
        """A token for the session's lease, or None when another holds it."""
        ...

    async def give_back(self, session: str, token: str) -> None: ...


class LocalLeases:
    """This process's leases."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._held: dict[str, tuple[str, float]] = {}

    async def take(self, session: str) -> str | None:
        return self.take_now(session)

    def take_now(self, session: str) -> str | None:
        now = self._clock()
        held = self._held.get(session)
        if held is not None and held[1] > now:
            return None
        token = secrets.token_hex(8)
        self._held[session] = (token, now + LEASE_S)
        return token

    async def give_back(self, session: str, token: str) -> None:
        held = self._held.get(session)
        if held is not None and held[0] == token:
            del self._held[session]


class _SharedLeases:
    """What both shared kinds do alike: a token taken elsewhere, this process's own leases
    while that fails (their tokens marked ``local:``), said once in the log. A kind gives
    ``where`` (for the log), the errors that mean it failed, and its two steps."""

    where = ""
    errors: tuple[type[BaseException], ...] = (Exception,)

    def __init__(self) -> None:
        self._local = LocalLeases()
        self._down = False

    async def take(self, session: str) -> str | None:
        token = secrets.token_hex(8)
        try:
            taken = await self._take(session, token)
        except self.errors as error:
            self._said_down(error)
            local = self._local.take_now(session)
            return None if local is None else "local:" + local
        if self._down:
            log.info("sessions' boundary leases are taken in %s again", self.where)
            self._down = False
        return token if taken else None

    async def give_back(self, session: str, token: str) -> None:
        if token.startswith("local:"):
            await self._local.give_back(session, token.removeprefix("local:"))
            return
        try:
            await self._give_back(session, token)
        except self.errors as error:  # it expires by itself
            self._said_down(error)

    async def _take(self, session: str, token: str) -> bool:
        raise NotImplementedError

    async def _give_back(self, session: str, token: str) -> None:
        raise NotImplementedError

    def _said_down(self, error: BaseException) -> None:
        if not self._down:
            log.warning(
                "sessions' boundary leases cannot be taken in %s (%s): this process's own"
                " until it answers",
                self.where,
                error,
            )
            self._down = True


class RedisLeases(_SharedLeases):
    """Leases every gateway on ``redis`` shares; this process's own while it cannot reach it."""

    where = "Redis"

    def __init__(self, redis: Any) -> None:
        super().__init__()
        self._redis = redis
        self._script: Any = None

    async def _take(self, session: str, token: str) -> bool:
        taken = await self._redis.set(KEY_PREFIX + session, token, nx=True, px=int(LEASE_S * 1000))
        return bool(taken)

    async def _give_back(self, session: str, token: str) -> None:
        if self._script is None:
            self._script = self._redis.register_script(_GIVE_BACK)
        await self._script(keys=[KEY_PREFIX + session], args=[token])


class SqliteLeases(_SharedLeases):
    """Leases the processes sharing ``db`` share (a table of it, made where missing by
    ``open``); this process's own while the file fails."""

    where = "SQLite"
    errors = (sqlite3.Error,)

    def __init__(self, db: SQLiteDatabase, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self._db = db
        self._clock = clock

    @classmethod
    async def open(cls, db: SQLiteDatabase) -> SqliteLeases:
        await db.run(_make_table)
        return cls(db)

    async def _take(self, session: str, token: str) -> bool:
        def take(conn: sqlite3.Connection) -> bool:
            now = self._clock()
            with transaction(conn):
                held = conn.execute(
                    "SELECT until FROM leases WHERE session = ?", (session,)
                ).fetchone()
                if held is not None and held[0] > now:
                    return False
                conn.execute(
                    "INSERT OR REPLACE INTO leases VALUES (?, ?, ?)",
                    (session, token, now + LEASE_S),
                )
                return True

        taken: bool = await self._db.run(take)
        return taken

    async def _give_back(self, session: str, token: str) -> None:
        def give_back(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute("DELETE FROM leases WHERE session = ? AND token = ?", (session, token))

        await self._db.run(give_back)


def _make_table(conn: sqlite3.Connection) -> None:
    with transaction(conn):
        conn.execute(
            "CREATE TABLE IF NOT EXISTS leases"
            " (session TEXT PRIMARY KEY, token TEXT NOT NULL, until REAL NOT NULL)"
        )
