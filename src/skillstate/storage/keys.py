"""Virtual keys: the credentials a team's gateway gives its people, each naming a tenant.

A key is ``ssk-`` and 43 characters of a random 32-byte value, shown once when made; the store
keeps only its SHA-256 (``digest``: 32 random bytes need no slow hash, nobody can guess one)
and an ``id``, the digest's first 12 hex digits, which lists, logs and revocations name. A key
may be an admin's (``admin``: the admin routes and commands), may expire, may be revoked (it
stays listed, refused from then on), may be kept to some models (``models``: glob
patterns, as the upstreams' ``models`` are; none: every model), and may have limits
(``KeyLimits``: a budget in USD per UTC day or month, requests and tokens per minute), which
belong to the key, not to its tenant: two keys of one tenant have a budget each.

Where they are kept: a table of the gateway's store, SQLite under the data directory
(``virtual_keys``) or the shared PostgreSQL database (``skillstate_keys``), each made by its
backend's schema migrations; in memory for tests.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any, Protocol

from skillstate.storage.postgres import PostgresDatabase
from skillstate.storage.sqlite import SQLiteDatabase, transaction

PREFIX = "ssk-"
TENANT_RULE = "1 to 32 characters of lowercase letters, digits and -"
_TENANT = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
_KEY = re.compile(r"ssk-[A-Za-z0-9_-]{43}")


def new_key() -> str:
    """A new key's text, to show once."""
    return PREFIX + secrets.token_urlsafe(32)


def looks_like_key(text: str) -> bool:
    """Whether ``text`` has a virtual key's shape (cheap, before any lookup)."""
    return text.startswith(PREFIX) and _KEY.fullmatch(text) is not None


def digest_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def valid_tenant(name: str) -> bool:
    return _TENANT.fullmatch(name) is not None


PERIODS = ("day", "month")
"""A budget's period: a UTC calendar day or month; it resets at the start of the next."""


@dataclass(frozen=True, slots=True)
class KeyLimits:
    """What a key may spend and send: ``budget_usd`` per ``period`` (None: no budget), and
    at most ``rpm`` upstream requests and ``tpm`` tokens (input and the output asked for) in
    any minute (None: no limit)."""

    budget_usd: float | None = None
    period: str = "month"
    rpm: int | None = None
    tpm: int | None = None

    def __post_init__(self) -> None:
        if self.period not in PERIODS:
            raise ValueError(f"a budget's period is day or month, not {self.period!r}")
        if self.budget_usd is not None and not self.budget_usd >= 0:
            raise ValueError(f"a budget is 0 USD or more, not {self.budget_usd!r}")
        for name, value in (("rpm", self.rpm), ("tpm", self.tpm)):
            if value is not None and value < 1:
                raise ValueError(f"{name} is 1 or more, not {value!r}")

    @property
    def any(self) -> bool:
        """Whether the key has a budget or a rate limit at all."""
        return self.budget_usd is not None or self.rpm is not None or self.tpm is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "budget_usd": self.budget_usd,
            "period": self.period,
            "rpm": self.rpm,
            "tpm": self.tpm,
        }


NO_LIMITS = KeyLimits()


@dataclass(frozen=True, slots=True)
class VirtualKey:
    """A key as stored: never its text."""

    digest: str
    tenant: str
    created: float
    admin: bool = False
    expires: float | None = None
    revoked: float | None = None
    models: tuple[str, ...] = ()
    limits: KeyLimits = NO_LIMITS

    @property
    def id(self) -> str:
        return self.digest[:12]

    def usable(self, now: float) -> bool:
        """Not revoked, not expired."""
        return self.revoked is None and (self.expires is None or now < self.expires)

    def allows(self, model: str) -> bool:
        """Whether the key may ask for ``model`` (no patterns: any)."""
        return not self.models or any(fnmatchcase(model, pattern) for pattern in self.models)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tenant": self.tenant,
            "admin": self.admin,
            "created": self.created,
            "expires": self.expires,
            "revoked": self.revoked,
            "models": list(self.models),
            **self.limits.as_json(),
        }


def made(
    tenant: str,
    *,
    admin: bool = False,
    expires: float | None = None,
    models: Sequence[str] = (),
    limits: KeyLimits = NO_LIMITS,
    now: float | None = None,
) -> tuple[str, VirtualKey]:
    """A new key's text (to show once) and its record (to store); ``ValueError`` for a tenant
    name that breaks ``TENANT_RULE``."""
    if not valid_tenant(tenant):
        raise ValueError(f"a tenant is {TENANT_RULE}: {tenant!r} is not")
    text = new_key()
    record = VirtualKey(
        digest_of(text),
        tenant,
        time.time() if now is None else now,
        admin=admin,
        expires=expires,
        models=tuple(models),
        limits=limits,
    )
    return text, record


class KeyStore(Protocol):
    async def add(self, key: VirtualKey) -> None: ...

    async def find(self, digest: str) -> VirtualKey | None:
        """The key with this digest, revoked or expired ones included, or None."""
        ...

    async def all(self) -> list[VirtualKey]:
        """Every key, oldest first."""
        ...

    async def revoke(self, key_id: str, now: float) -> VirtualKey | None:
        """Revoke the key whose id is ``key_id`` (from now on); the key, or None when there
        is none by that id."""
        ...

    async def limit(self, key_id: str, limits: KeyLimits) -> VirtualKey | None:
        """Give the key whose id is ``key_id`` these limits (replacing its own); the key as it
        is now, or None when there is none by that id."""
        ...


class MemoryKeyStore:
    def __init__(self) -> None:
        self._keys: dict[str, VirtualKey] = {}

    async def add(self, key: VirtualKey) -> None:
        self._keys[key.digest] = key

    async def find(self, digest: str) -> VirtualKey | None:
        return self._keys.get(digest)

    async def all(self) -> list[VirtualKey]:
        return sorted(self._keys.values(), key=lambda k: (k.created, k.digest))

    async def revoke(self, key_id: str, now: float) -> VirtualKey | None:
        for digest, key in self._keys.items():
            if key.id == key_id:
                if key.revoked is None:
                    self._keys[digest] = key = replace(key, revoked=now)
                return key
        return None

    async def limit(self, key_id: str, limits: KeyLimits) -> VirtualKey | None:
        for digest, key in self._keys.items():
            if key.id == key_id:
                self._keys[digest] = key = replace(key, limits=limits)
                return key
        return None


_COLUMNS = "digest, tenant, created, admin, expires, revoked, models, budget_usd, period, rpm, tpm"
_SET_LIMITS = "budget_usd = {}, period = {}, rpm = {}, tpm = {}"


def _key(row: Sequence[Any]) -> VirtualKey:
    digest, tenant, created, admin, expires, revoked, models, budget, period, rpm, tpm = row
    patterns = tuple(p for p in str(models).split(",") if p)
    limits = KeyLimits(budget, period, rpm, tpm)
    return VirtualKey(digest, tenant, created, bool(admin), expires, revoked, patterns, limits)


def _limit_values(limits: KeyLimits) -> tuple[float | None, str, int | None, int | None]:
    return (limits.budget_usd, limits.period, limits.rpm, limits.tpm)


class SqliteKeyStore:
    """The keys in the ``virtual_keys`` table of the gateway's SQLite database."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    async def add(self, key: VirtualKey) -> None:
        values = (key.digest, key.tenant, key.created, int(key.admin), key.expires, key.revoked)

        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute(
                    f"INSERT INTO virtual_keys ({_COLUMNS}) VALUES ({', '.join('?' * 11)})",
                    (*values, ",".join(key.models), *_limit_values(key.limits)),
                )

        await self._db.run(work)

    async def find(self, digest: str) -> VirtualKey | None:
        def work(conn: sqlite3.Connection) -> Any:
            sql = f"SELECT {_COLUMNS} FROM virtual_keys WHERE digest = ?"
            return conn.execute(sql, (digest,)).fetchone()

        row = await self._db.run(work)
        return None if row is None else _key(row)

    async def all(self) -> list[VirtualKey]:
        def work(conn: sqlite3.Connection) -> list[Any]:
            sql = f"SELECT {_COLUMNS} FROM virtual_keys ORDER BY created, digest"
            return conn.execute(sql).fetchall()

        return [_key(row) for row in await self._db.run(work)]

    async def revoke(self, key_id: str, now: float) -> VirtualKey | None:
        def work(conn: sqlite3.Connection) -> Any:
            with transaction(conn):
                conn.execute(
                    "UPDATE virtual_keys SET revoked = ? WHERE substr(digest, 1, 12) = ?"
                    " AND revoked IS NULL",
                    (now, key_id),
                )
                sql = f"SELECT {_COLUMNS} FROM virtual_keys WHERE substr(digest, 1, 12) = ?"
                return conn.execute(sql, (key_id,)).fetchone()

        row = await self._db.run(work)
        return None if row is None else _key(row)

    async def limit(self, key_id: str, limits: KeyLimits) -> VirtualKey | None:
        def work(conn: sqlite3.Connection) -> Any:
            with transaction(conn):
                conn.execute(
                    f"UPDATE virtual_keys SET {_SET_LIMITS.format(*'????')}"
                    " WHERE substr(digest, 1, 12) = ?",
                    (*_limit_values(limits), key_id),
                )
                sql = f"SELECT {_COLUMNS} FROM virtual_keys WHERE substr(digest, 1, 12) = ?"
                return conn.execute(sql, (key_id,)).fetchone()

        row = await self._db.run(work)
        return None if row is None else _key(row)


class PostgresKeyStore:
    """The keys in the ``skillstate_keys`` table of the shared database."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def add(self, key: VirtualKey) -> None:
        await self._db.pool.execute(
            f"INSERT INTO skillstate_keys ({_COLUMNS})"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            key.digest,
            key.tenant,
            key.created,
            key.admin,
            key.expires,
            key.revoked,
            ",".join(key.models),
            *_limit_values(key.limits),
        )

    async def find(self, digest: str) -> VirtualKey | None:
        sql = f"SELECT {_COLUMNS} FROM skillstate_keys WHERE digest = $1"
        row = await self._db.pool.fetchrow(sql, digest)
        return None if row is None else _key(tuple(row))

    async def all(self) -> list[VirtualKey]:
        rows = await self._db.pool.fetch(
            f"SELECT {_COLUMNS} FROM skillstate_keys ORDER BY created, digest"
        )
        return [_key(tuple(row)) for row in rows]

    async def revoke(self, key_id: str, now: float) -> VirtualKey | None:
        async with self._db.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "UPDATE skillstate_keys SET revoked = $1 WHERE left(digest, 12) = $2"
                " AND revoked IS NULL",
                now,
                key_id,
            )
            row = await conn.fetchrow(
                f"SELECT {_COLUMNS} FROM skillstate_keys WHERE left(digest, 12) = $1", key_id
            )
        return None if row is None else _key(tuple(row))

    async def limit(self, key_id: str, limits: KeyLimits) -> VirtualKey | None:
        row = await self._db.pool.fetchrow(
            f"UPDATE skillstate_keys SET {_SET_LIMITS.format('$1', '$2', '$3', '$4')}"
            f" WHERE left(digest, 12) = $5 RETURNING {_COLUMNS}",
            *_limit_values(limits),
            key_id,
        )
        return None if row is None else _key(tuple(row))
