"""The price catalog's age (issue 26): stale past six months, told by the day given (the
caller's clock), in the shape /cost, ``skillstate prices`` and ``doctor`` show."""

from __future__ import annotations

import datetime

from skillstate.economics.catalog_age import STALE_AFTER_DAYS, catalog_age, utc_day

AS_OF = datetime.date(2025, 11, 24)


def test_a_catalog_is_stale_past_six_months() -> None:
    assert STALE_AFTER_DAYS == 183
    fresh = catalog_age(AS_OF, datetime.date(2026, 5, 26))
    assert (fresh.age_days, fresh.stale, fresh.warning()) == (183, False, None)
    stale = catalog_age(AS_OF, datetime.date(2026, 5, 27))
    assert (stale.age_days, stale.stale) == (184, True)


def test_the_json_shape_is_date_age_days_and_stale() -> None:
    age = catalog_age(AS_OF, datetime.date(2026, 12, 3))
    assert age.as_json() == {"date": "2025-11-24", "age_days": 374, "stale": True}


def test_the_warning_names_the_date_the_age_and_the_fix() -> None:
    warning = catalog_age(AS_OF, datetime.date(2026, 12, 3)).warning()
    assert warning is not None
    assert "2025-11-24" in warning and "374 days old" in warning
    assert '[prices."MODEL"]' in warning


def test_a_clock_behind_the_catalog_reads_age_zero() -> None:
    assert catalog_age(AS_OF, datetime.date(2025, 1, 1)).age_days == 0


def test_the_day_of_a_ledger_clock_is_utcs() -> None:
    assert utc_day(1_764_547_199.0) == datetime.date(2025, 11, 30)  # 23:59:59 UTC
    assert utc_day(1_764_547_200.0) == datetime.date(2025, 12, 1)
