"""How old the price catalog is, and whether it is too old to trust without a look.

The shipped catalog's figures are copied by hand on its ``as_of`` date and never updated by
themselves (docs/prices.md). Past ``STALE_AFTER_DAYS`` (six months) it is *stale*: ``skillstate
prices`` and ``skillstate doctor`` print a warning naming its date and age and how to correct a
model, and ``GET /cost`` carries ``{"date", "age_days", "stale"}`` for the dashboard. Pure: the
day it is now is an argument (each caller owns its clock)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

STALE_AFTER_DAYS = 183
"""Six months: a catalog older than this many days is stale."""


@dataclass(frozen=True, slots=True)
class CatalogAge:
    """The catalog's date and its age in whole days on the day asked about (never below 0)."""

    date: datetime.date
    age_days: int

    @property
    def stale(self) -> bool:
        return self.age_days > STALE_AFTER_DAYS

    def as_json(self) -> dict[str, object]:
        """``{"date": "YYYY-MM-DD", "age_days": N, "stale": bool}``: /cost's ``catalog``."""
        return {"date": self.date.isoformat(), "age_days": self.age_days, "stale": self.stale}

    def warning(self) -> str | None:
        """One line for a stale catalog (None for a fresh one), with what to do about it."""
        if not self.stale:
            return None
        return (
            f"the price catalog is of {self.date.isoformat()}, {self.age_days} days old (over "
            "six months): prices may have changed since. Check the providers' pages "
            '(skillstate prices names them) and correct a model with a [prices."MODEL"] table '
            "in the config"
        )


def catalog_age(as_of: datetime.date, today: datetime.date) -> CatalogAge:
    """The age of a catalog dated ``as_of`` on ``today``."""
    return CatalogAge(as_of, max(0, (today - as_of).days))


def utc_day(seconds: float) -> datetime.date:
    """The UTC calendar day of a Unix time (a ledger clock's reading)."""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).date()
