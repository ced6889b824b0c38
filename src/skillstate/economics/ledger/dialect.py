"""What the ledger's SQL says differently on SQLite and on PostgreSQL.

The report's SQL (``report``) is written in what both engines take alike: counts as
``SUM(CASE WHEN ... THEN 1 ELSE 0 END)`` (PostgreSQL sums no booleans), sums as
``COALESCE(SUM(x), 0.0)`` (SQLite's ``TOTAL``). What remains apart is here, one format each:
the table's name, a query parameter, a group's values joined by commas, a substring test, the
hour a time falls in, and a text column ordered byte by byte (PostgreSQL orders by the
database's collation unless told ``COLLATE "C"``; SQLite's ``BINARY`` compares the UTF-8
bytes, as ``"C"`` does). The hour truncates toward zero on both: PostgreSQL's
``CAST(x AS BIGINT)`` rounds, so it is told ``trunc`` first.

A query is handed to a ledger as a function of the dialect (``Sql``), so that a ledger that
moved to its fallback (``PostgresLedger``) writes it again for the table that answers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["POSTGRES", "SQLITE", "Dialect", "Sql"]


@dataclass(frozen=True, slots=True)
class Dialect:
    """One engine's words: each ``*_as`` a ``str.format`` pattern its method fills in."""

    table: str
    """The ledger table's name."""
    marker: str
    """The ``n``-th query parameter (from 1), as ``str.format(n=n)`` makes it."""
    joined_as: str
    holds_as: str
    hour_as: str
    bytewise_as: str

    def mark(self, n: int) -> str:
        return self.marker.format(n=n)

    def joined(self, expression: str) -> str:
        """The group's non-null values of ``expression``, joined by commas (in no order)."""
        return self.joined_as.format(expression)

    def holds(self, text: str, part: str) -> str:
        """True where ``part`` occurs in ``text`` (case and all: no pattern)."""
        return self.holds_as.format(text, part)

    def hour(self, seconds: str) -> str:
        """The whole hours in ``seconds`` (Unix seconds), truncated, as an integer."""
        return self.hour_as.format(seconds)

    def bytewise(self, column: str) -> str:
        """``column`` in an ``ORDER BY``, compared byte by byte on both engines."""
        return self.bytewise_as.format(column)


SQLITE = Dialect(
    table="ledger",
    marker="?",
    joined_as="GROUP_CONCAT({}, ',')",
    holds_as="instr({}, {}) > 0",
    hour_as="CAST({} / 3600 AS INTEGER)",
    bytewise_as="{}",
)
POSTGRES = Dialect(
    table="skillstate_ledger",
    marker="${n}",
    joined_as="string_agg({}, ',')",
    holds_as="strpos({}, {}) > 0",
    hour_as="CAST(trunc({} / 3600) AS BIGINT)",
    bytewise_as='{} COLLATE "C"',
)

Sql = Callable[[Dialect], str]
"""A query, written for the dialect it is given."""
