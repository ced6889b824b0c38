"""Settings shared by every test: Hypothesis without its per-example deadline.

A property test checks what a function does, not how fast: speed lives in the benchmarks.
Under a loaded machine (CI's two cores running two workers) an example can pass Hypothesis's
default 200 ms deadline and fail a sound test; tests that set their own ``@settings`` keep
them."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("skillstate", deadline=None)
settings.load_profile("skillstate")


@pytest.fixture
def postgres_url() -> str:
    """This process's PostgreSQL test database (``skillstate.testing.postgres``); the test is
    skipped where no server answers, except in CI (``CI`` set), where it fails: ``.ci/run``
    starts the server first."""
    from skillstate.testing import postgres

    try:
        return postgres.dsn()
    except postgres.PostgresUnavailable as error:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(error))
