"""Virtual keys on a running test gateway (``testing.gateway``): the keys' table of its own
SQLite store, and a key ring that never caches a lookup, put in the gateway's place, so a key
made or revoked counts from the next request."""

from __future__ import annotations

from typing import Any

from skillstate.gateway import RunningGateway
from skillstate.server.keyring import KeyRing
from skillstate.storage.keys import SqliteKeyStore, VirtualKey, made


class GatewayKeys:
    """``gateway``'s keys: ``make`` one, send it with ``bearer``."""

    def __init__(self, gateway: RunningGateway) -> None:
        assert gateway.context.stores is not None and gateway.context.stores.database
        self.store = SqliteKeyStore(gateway.context.stores.database)
        self.ring = KeyRing(self.store, ttl=0.0)
        gateway.context.keys = self.ring

    async def make(self, tenant: str, **given: Any) -> tuple[str, VirtualKey]:
        """A new usable key of ``tenant`` (``given``: ``storage.keys.made``'s options): its
        text and what the store keeps."""
        text, key = made(tenant, **given)
        await self.store.add(key)
        await self.ring.refresh()
        return text, key


def bearer(text: str) -> dict[str, str]:
    """The header that sends key ``text``."""
    return {"authorization": f"Bearer {text}"}
