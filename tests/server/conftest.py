"""Fixtures of the server tests: the machine's Redis."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest
from redis import asyncio as aioredis
from shared_sessions import REDIS_URL

from skillstate.upstream.shared_limits import KEY_PREFIX


@pytest.fixture
async def redis_url() -> AsyncIterator[str]:
    """The machine's Redis; the keys a test makes (its upstream's name is its own) are
    deleted after it."""
    client = aioredis.from_url(REDIS_URL, socket_connect_timeout=1.0)
    try:
        await client.ping()
    except Exception as error:
        await client.aclose()
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Redis at {REDIS_URL}: {error}")
    try:
        yield REDIS_URL
    finally:
        async for key in client.scan_iter(match=KEY_PREFIX + "test-*"):
            await client.delete(key)
        await client.aclose()
