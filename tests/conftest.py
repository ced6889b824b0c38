"""Settings shared by every test: Hypothesis without its per-example deadline.

A property test checks what a function does, not how fast: speed lives in the benchmarks.
Under a loaded machine (CI's two cores running two workers) an example can pass Hypothesis's
default 200 ms deadline and fail a sound test; tests that set their own ``@settings`` keep
them."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

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


@pytest.fixture
async def redis_client() -> AsyncIterator[Any]:
    """A client of the machine's Redis (``skillstate.testing.redis``); the test is skipped
    where none answers, except in CI, where it fails; the keys it made are deleted after it."""
    from redis import asyncio as aioredis

    from skillstate.testing import redis

    client = aioredis.from_url(redis.URL, socket_connect_timeout=1.0)
    try:
        await client.ping()
    except Exception as error:
        await client.aclose()
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Redis at {redis.URL}: {error}")
    try:
        yield client
    finally:
        await redis.forget(client)
        await client.aclose()


@pytest.fixture
def redis_url(redis_client: Any) -> str:
    """The URL of the machine's Redis, as ``redis_client`` found it."""
    from skillstate.testing import redis

    return redis.URL
