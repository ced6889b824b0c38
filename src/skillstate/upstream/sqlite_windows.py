"""The rate limits and circuits of the processes of one machine (``--workers`` without Redis),
shared through the SQLite file they already share: what ``shared_limits`` and
``shared_circuits`` keep in Redis, kept in two tables of that file instead.

* ``rate_window``: each upstream's admitted requests of the last minute (start time, tokens).
  An admission is one ``BEGIN IMMEDIATE`` transaction, so processes take turns: the rows are
  read, ``limits.RateLimit``'s own rule decides on them, and an admitted request is written
  before the next process reads. Wall-clock time: the processes share one clock.
* ``circuit_buckets`` and ``circuit_open``: the circuits' window, as ``shared_circuits`` reads
  and adds to it once a second.

The tables are this module's, made where missing when the first limit or window is built
(as the ledger makes its own). The work runs on the database's own thread (``run``: the
store's ``SQLiteDatabase.run``); a file that fails leaves each process its own limit, said
once in the log, as a Redis out of reach does.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from skillstate.upstream.circuit import CircuitPolicy, Counts
from skillstate.upstream.limits import WINDOW_S, Admission, RateLimit

log = logging.getLogger("skillstate.upstream")
T = TypeVar("T")
Run = Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]]
"""Runs work on the database's thread (``SQLiteDatabase.run``)."""

TABLES = (
    """CREATE TABLE IF NOT EXISTS rate_window (
        id INTEGER PRIMARY KEY, upstream TEXT NOT NULL, at REAL NOT NULL,
        tokens INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS rate_window_upstream ON rate_window (upstream, at)",
    """CREATE TABLE IF NOT EXISTS circuit_buckets (
        upstream TEXT NOT NULL, bucket INTEGER NOT NULL, calls INTEGER NOT NULL,
        failed INTEGER NOT NULL, tries INTEGER NOT NULL, failed_tries INTEGER NOT NULL,
        PRIMARY KEY (upstream, bucket))""",
    "CREATE TABLE IF NOT EXISTS circuit_open (upstream TEXT PRIMARY KEY, until REAL NOT NULL)",
)


async def make_tables(run: Run) -> None:
    """The tables, where missing."""
    await run(lambda conn: _in_transaction(conn, lambda: [conn.execute(t) for t in TABLES]))


class SqliteRateLimit:
    """``RateLimit``'s rule over ``rate_window``; ``local`` is the window used while the file
    fails."""

    def __init__(
        self,
        run: Run,
        upstream: str,
        local: RateLimit,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._run = run
        self.upstream = upstream
        self.local = local
        self._clock = clock
        self._down = False

    async def admit(self, tokens: int) -> Admission:
        """As ``RateLimit.admit``, across the processes on this file."""
        try:
            admission: Admission = await self._run(lambda conn: self._admit(conn, tokens))
        except sqlite3.Error as error:
            if not self._down:
                log.warning(
                    "upstream %r: its rate limit shared through SQLite cannot be read (%s):"
                    " this process's own until it can",
                    self.upstream,
                    error,
                )
                self._down = True
            return self.local.admit(tokens)
        self._down = False
        return admission

    def _admit(self, conn: sqlite3.Connection, tokens: int) -> Admission:
        def decide() -> Admission:
            now = self._clock()
            name = self.upstream
            conn.execute(
                "DELETE FROM rate_window WHERE upstream = ? AND at <= ?", (name, now - WINDOW_S)
            )
            rows = conn.execute(
                "SELECT at, tokens FROM rate_window WHERE upstream = ? ORDER BY at, id", (name,)
            ).fetchall()
            local = self.local
            rule = RateLimit(lambda: now, local.rpm, local.tpm, local.max_wait_s, deque(rows))
            admission = rule.admit(tokens)
            if admission.wait_s is not None:
                conn.execute(
                    "INSERT INTO rate_window (upstream, at, tokens) VALUES (?, ?, ?)",
                    (name, now + admission.wait_s, tokens),
                )
            return admission

        return _in_transaction(conn, decide)


class SqliteWindow:
    """The circuits' window (``shared_circuits.Window``) in ``circuit_buckets`` and
    ``circuit_open``."""

    def __init__(self, run: Run, *, clock: Callable[[], float] = time.time) -> None:
        self._run = run
        self._clock = clock

    async def exchange(
        self, name: str, buckets: range, add: Counts | None, policy: CircuitPolicy
    ) -> tuple[list[Counts], float | None]:
        def work(conn: sqlite3.Connection) -> tuple[list[Counts], float | None]:
            return _in_transaction(conn, lambda: self._exchange(conn, name, buckets, add, policy))

        result: tuple[list[Counts], float | None] = await self._run(work)
        return result

    def _exchange(
        self,
        conn: sqlite3.Connection,
        name: str,
        buckets: range,
        add: Counts | None,
        policy: CircuitPolicy,
    ) -> tuple[list[Counts], float | None]:
        now = self._clock()
        conn.execute(
            "DELETE FROM circuit_buckets WHERE upstream = ? AND bucket < ?", (name, buckets.start)
        )
        if add is None:
            conn.execute(
                "INSERT OR REPLACE INTO circuit_open VALUES (?, ?)", (name, now + policy.open_s)
            )
            conn.execute("DELETE FROM circuit_buckets WHERE upstream = ?", (name,))
        elif any(add):
            conn.execute(
                "INSERT INTO circuit_buckets VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET"
                " calls = calls + excluded.calls, failed = failed + excluded.failed,"
                " tries = tries + excluded.tries,"
                " failed_tries = failed_tries + excluded.failed_tries",
                (name, buckets[-1], *add),
            )
        found = {
            row[0]: (row[1], row[2], row[3], row[4])
            for row in conn.execute(
                "SELECT bucket, calls, failed, tries, failed_tries FROM circuit_buckets"
                " WHERE upstream = ?",
                (name,),
            )
        }
        until = conn.execute(
            "SELECT until FROM circuit_open WHERE upstream = ?", (name,)
        ).fetchone()
        left = None if until is None or until[0] <= now else until[0] - now
        return [found.get(index, (0, 0, 0, 0)) for index in buckets], left


def _in_transaction(conn: sqlite3.Connection, work: Callable[[], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = work()
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return result
