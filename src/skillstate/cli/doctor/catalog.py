"""The check of the price catalog: its date, and a warning once it is older than six months
(``economics.catalog_age``): costs are priced with it, and it does not update itself."""

from __future__ import annotations

import datetime

from skillstate.cli.doctor.check import Check
from skillstate.economics.catalog_age import catalog_age
from skillstate.economics.prices import builtin_catalog


def check_catalog(today: datetime.date) -> Check:
    """The shipped catalog's age on ``today``: fine while fresh, information (never a failure:
    the gateway works, its costs may be dated) once stale, naming its date, its age and the
    config table that corrects a model."""
    age = catalog_age(builtin_catalog().as_of, today)
    warning = age.warning()
    if warning is None:
        return Check("price catalog", True, f"of {age.date.isoformat()}, {age.age_days} days old")
    return Check("price catalog", None, f"stale: {warning}")
