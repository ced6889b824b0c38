"""The Redis the tests use: the machine's (``SKILLSTATE_TEST_REDIS`` to move it). Tests name
what they make there ``...test-...`` (an upstream, a session), and ``forget`` removes it."""

from __future__ import annotations

import os
from typing import Any

URL = os.environ.get("SKILLSTATE_TEST_REDIS", "redis://127.0.0.1:6379/0")
"""Where the tests' Redis is."""
TEST_KEYS = "skillstate:*test-*"
"""The keys the tests make (rate limits, circuits, leases of upstreams and sessions named
``test-...``)."""


async def forget(client: Any) -> None:
    """Delete every key a test made."""
    async for key in client.scan_iter(match=TEST_KEYS):
        await client.delete(key)
