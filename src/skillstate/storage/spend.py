"""What each virtual key has spent of its budget: ``SpendStore``.

The contract, the same on every backend:

* A key's spending is counted per period (``period``: the UTC day ``2025-06-01`` or month
  ``2025-06`` the key's budget is for), as ``spent`` (settled, in USD) and the ``holds`` of
  requests in flight (each an amount reserved before the request went upstream).
* ``reserve(key_id, period, amount, limit, now)`` is one atomic step: granted (a ``Hold``)
  only when ``spent + held + amount <= limit``, else refused (a ``Tally`` of what was spent
  and held). However many requests (processes, machines) reserve at once, the holds granted
  never take a period past its limit; only a request that costs more than it reserved can,
  and the gateway reserves an upper bound (``economics.allowance``).
* ``settle(hold, actual)`` ends the hold and adds ``actual`` to the spent of the hold's
  period; ``release(hold)`` ends it and adds nothing (a request that failed before any
  reply, one the upstream refused).
* A hold expires ``HOLD_S`` after it was made (``expires``): a process that died with
  requests in flight does not keep their budget forever. An expired hold no longer counts
  against the limit; settling it still adds what the request cost.

Where it is kept: memory (tests, a gateway without a database), the SQLite file under the
data directory (``budget_spent``, ``budget_holds``: each step one ``BEGIN IMMEDIATE``
transaction, so the ``--workers`` processes of a machine take turns), or the shared
PostgreSQL database (``skillstate_budget_spent``, ``skillstate_budget_holds``: each step one
transaction holding the key's row of the period locked, so every gateway on it shares one
budget). The tables are made by the backends' schema migrations.
"""

from __future__ import annotations

import secrets
import sqlite3
from dataclasses import dataclass
from typing import Any, Protocol

from skillstate.storage.postgres import PostgresDatabase
from skillstate.storage.sqlite import SQLiteDatabase, transaction

HOLD_S = 3_600.0
"""How long a hold counts against its key's budget at most."""


@dataclass(frozen=True, slots=True)
class Hold:
    """An amount reserved for one upstream call of a key, in its period."""

    id: str
    key_id: str
    period: str
    amount: float


@dataclass(frozen=True, slots=True)
class Tally:
    """A refusal: what the key's period had spent and held when it was asked."""

    spent: float
    held: float


class SpendStore(Protocol):
    async def reserve(
        self, key_id: str, period: str, amount: float, limit: float, now: float
    ) -> Hold | Tally:
        """Hold ``amount`` when the period's spent and held leave room for it under
        ``limit``, else say what they are."""
        ...

    async def settle(self, hold: Hold, actual: float) -> None:
        """End ``hold``; ``actual`` is added to what its period spent."""
        ...

    async def release(self, hold: Hold) -> None:
        """End ``hold``; nothing is spent."""
        ...

    async def tally(self, key_id: str, period: str, now: float) -> Tally:
        """What the key's period has spent and holds."""
        ...


def _hold_id() -> str:
    return secrets.token_hex(12)


class MemorySpendStore:
    def __init__(self) -> None:
        self._spent: dict[tuple[str, str], float] = {}
        self._holds: dict[str, tuple[Hold, float]] = {}

    async def reserve(
        self, key_id: str, period: str, amount: float, limit: float, now: float
    ) -> Hold | Tally:
        found = await self.tally(key_id, period, now)
        if found.spent + found.held + amount > limit:
            return found
        hold = Hold(_hold_id(), key_id, period, amount)
        self._holds[hold.id] = (hold, now + HOLD_S)
        return hold

    async def settle(self, hold: Hold, actual: float) -> None:
        self._holds.pop(hold.id, None)
        where = (hold.key_id, hold.period)
        self._spent[where] = self._spent.get(where, 0.0) + actual

    async def release(self, hold: Hold) -> None:
        self._holds.pop(hold.id, None)

    async def tally(self, key_id: str, period: str, now: float) -> Tally:
        for gone in [h for h, (_, expires) in self._holds.items() if expires <= now]:
            del self._holds[gone]
        held = sum(
            hold.amount
            for hold, _ in self._holds.values()
            if hold.key_id == key_id and hold.period == period
        )
        return Tally(self._spent.get((key_id, period), 0.0), held)


class SqliteSpendStore:
    """Spending in ``budget_spent`` and ``budget_holds`` of the gateway's SQLite file."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    async def reserve(
        self, key_id: str, period: str, amount: float, limit: float, now: float
    ) -> Hold | Tally:
        def work(conn: sqlite3.Connection) -> Hold | Tally:
            with transaction(conn):
                found = _sqlite_tally(conn, key_id, period, now)
                if found.spent + found.held + amount > limit:
                    return found
                hold = Hold(_hold_id(), key_id, period, amount)
                conn.execute(
                    "INSERT INTO budget_holds VALUES (?, ?, ?, ?, ?)",
                    (hold.id, key_id, period, amount, now + HOLD_S),
                )
                return hold

        result: Hold | Tally = await self._db.run(work)
        return result

    async def settle(self, hold: Hold, actual: float) -> None:
        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute("DELETE FROM budget_holds WHERE id = ?", (hold.id,))
                conn.execute(
                    "INSERT INTO budget_spent VALUES (?, ?, ?) ON CONFLICT (key_id, period)"
                    " DO UPDATE SET spent = spent + excluded.spent",
                    (hold.key_id, hold.period, actual),
                )

        await self._db.run(work)

    async def release(self, hold: Hold) -> None:
        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute("DELETE FROM budget_holds WHERE id = ?", (hold.id,))

        await self._db.run(work)

    async def tally(self, key_id: str, period: str, now: float) -> Tally:
        def work(conn: sqlite3.Connection) -> Tally:
            with transaction(conn):
                return _sqlite_tally(conn, key_id, period, now)

        result: Tally = await self._db.run(work)
        return result


def _sqlite_tally(conn: sqlite3.Connection, key_id: str, period: str, now: float) -> Tally:
    conn.execute("DELETE FROM budget_holds WHERE key_id = ? AND expires <= ?", (key_id, now))
    spent = conn.execute(
        "SELECT spent FROM budget_spent WHERE key_id = ? AND period = ?", (key_id, period)
    ).fetchone()
    held = conn.execute(
        "SELECT COALESCE(SUM(amount), 0) FROM budget_holds WHERE key_id = ? AND period = ?",
        (key_id, period),
    ).fetchone()
    return Tally(float(spent[0]) if spent else 0.0, float(held[0]))


class PostgresSpendStore:
    """Spending in ``skillstate_budget_spent`` and ``skillstate_budget_holds`` of the shared
    database: a reservation locks the key's row of the period (made where missing) for its
    transaction, so the gateways' reservations for one key take turns."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def reserve(
        self, key_id: str, period: str, amount: float, limit: float, now: float
    ) -> Hold | Tally:
        async with self._db.pool.acquire() as conn, conn.transaction():
            found = await _postgres_tally(conn, key_id, period, now, lock=True)
            if found.spent + found.held + amount > limit:
                return found
            hold = Hold(_hold_id(), key_id, period, amount)
            await conn.execute(
                "INSERT INTO skillstate_budget_holds VALUES ($1, $2, $3, $4, $5)",
                hold.id,
                key_id,
                period,
                amount,
                now + HOLD_S,
            )
        return hold

    async def settle(self, hold: Hold, actual: float) -> None:
        async with self._db.pool.acquire() as conn, conn.transaction():
            await conn.execute("DELETE FROM skillstate_budget_holds WHERE id = $1", hold.id)
            await conn.execute(
                "INSERT INTO skillstate_budget_spent VALUES ($1, $2, $3)"
                " ON CONFLICT (key_id, period)"
                " DO UPDATE SET spent = skillstate_budget_spent.spent + excluded.spent",
                hold.key_id,
                hold.period,
                actual,
            )

    async def release(self, hold: Hold) -> None:
        await self._db.pool.execute("DELETE FROM skillstate_budget_holds WHERE id = $1", hold.id)

    async def tally(self, key_id: str, period: str, now: float) -> Tally:
        async with self._db.pool.acquire() as conn, conn.transaction():
            return await _postgres_tally(conn, key_id, period, now, lock=False)


async def _postgres_tally(conn: Any, key_id: str, period: str, now: float, *, lock: bool) -> Tally:
    if lock:
        await conn.execute(
            "INSERT INTO skillstate_budget_spent VALUES ($1, $2, 0) ON CONFLICT DO NOTHING",
            key_id,
            period,
        )
        spent = await conn.fetchval(
            "SELECT spent FROM skillstate_budget_spent WHERE key_id = $1 AND period = $2"
            " FOR UPDATE",
            key_id,
            period,
        )
    else:
        spent = await conn.fetchval(
            "SELECT spent FROM skillstate_budget_spent WHERE key_id = $1 AND period = $2",
            key_id,
            period,
        )
    await conn.execute(
        "DELETE FROM skillstate_budget_holds WHERE key_id = $1 AND expires <= $2", key_id, now
    )
    held = await conn.fetchval(
        "SELECT COALESCE(SUM(amount), 0) FROM skillstate_budget_holds"
        " WHERE key_id = $1 AND period = $2",
        key_id,
        period,
    )
    return Tally(float(spent or 0.0), float(held))
