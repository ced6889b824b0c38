"""The virtual keys a gateway checks requests against (``storage.keys``), read through a short
cache, so that the guard asks the store at most once per key and ``TTL_S``.

``active`` says whether any usable key exists: refreshed every ``TTL_S`` off the request path,
so the guard reads a flag; a key made or revoked by ``skillstate keys`` (on any machine, with a
shared store) counts within that. No key ever made: today's rules (the token, if set).

A store that cannot be read keeps what was known: ``active`` as it was, keys found before still
found (their revocation then waits for the store), a key never seen refused. Keys add access
beside the token and never take the token's away, so a store that fails at start leaves the
gateway as it is without keys.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from skillstate.storage.keys import KeyStore, VirtualKey, digest_of
from skillstate.support.periodic import Periodic

log = logging.getLogger("skillstate.server")

TTL_S = 5.0
"""How long a key's lookup (found or not) and ``active`` are trusted."""
_KEPT = 4096
"""Lookups kept at most (a flood of made-up keys evicts, it does not grow memory)."""


class KeyRing:
    """``store``'s keys, each lookup trusted for ``ttl`` seconds."""

    def __init__(
        self,
        store: KeyStore,
        *,
        ttl: float = TTL_S,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._ttl = ttl
        self._clock = clock
        self._wall = wall
        self.active = False
        """Whether some usable key exists (as of the last refresh)."""
        self.ever_active = False
        """Whether ``active`` has been true in this process's life: until it is, no request
        came with a key, and the request path need not look for one."""
        self._found: dict[str, tuple[VirtualKey | None, float]] = {}
        self._refreshing = Periodic(ttl or TTL_S, self.refresh)
        self._failing = False

    async def start(self) -> None:
        """Read ``active`` now, then every ``TTL_S``."""
        await self.refresh()
        self._refreshing.start()

    async def close(self) -> None:
        await self._refreshing.close()

    async def refresh(self) -> None:
        try:
            keys = await self._store.all()
        except Exception as error:
            self._said(error)
            return
        now = self._wall()
        self.active = any(key.usable(now) for key in keys)
        self.ever_active = self.ever_active or self.active
        self._failing = False

    async def resolve(self, presented: str) -> VirtualKey | None:
        """The usable key ``presented`` is, or None."""
        return await self.current(digest_of(presented))

    async def current(self, digest: str) -> VirtualKey | None:
        """The usable key whose digest is ``digest``, as the store now has it (revoked,
        expired or unknown: None); what a request admitted earlier checks again."""
        kept = self._found.get(digest)
        if kept is None or self._clock() - kept[1] >= self._ttl:
            try:
                key = await self._store.find(digest)
            except Exception as error:
                self._said(error)
                key = kept[0] if kept is not None else None
            else:
                self._failing = False
                if len(self._found) >= _KEPT:
                    self._found.clear()
                self._found[digest] = (key, self._clock())
        else:
            key = kept[0]
        return key if key is not None and key.usable(self._wall()) else None

    def _said(self, error: BaseException) -> None:
        if not self._failing:
            log.warning("the virtual keys cannot be read (%s): going by what was known", error)
            self._failing = True
