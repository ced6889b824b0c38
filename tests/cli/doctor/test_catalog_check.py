"""doctor's price catalog check (issue 26): its date and age, and once it is older than six
months a warning that names them and the config table that corrects a model; the day is
given, not read from the clock."""

from __future__ import annotations

import datetime

from skillstate.cli.doctor.catalog import check_catalog
from skillstate.economics.catalog_age import STALE_AFTER_DAYS
from skillstate.economics.prices import builtin_catalog

AS_OF = builtin_catalog().as_of


def test_a_fresh_catalog_is_fine_and_says_its_date() -> None:
    check = check_catalog(AS_OF + datetime.timedelta(days=STALE_AFTER_DAYS))
    assert check.ok is True and check.name == "price catalog"
    assert check.detail == f"of {AS_OF.isoformat()}, {STALE_AFTER_DAYS} days old"


def test_a_catalog_older_than_six_months_is_a_warning_not_a_failure() -> None:
    check = check_catalog(AS_OF + datetime.timedelta(days=400))
    assert check.ok is None  # information: doctor still exits 0 for it
    assert check.detail.startswith("stale: ")
    assert AS_OF.isoformat() in check.detail and "400 days old" in check.detail
    assert '[prices."MODEL"]' in check.detail
