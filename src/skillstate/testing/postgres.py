"""A PostgreSQL database for the tests of a process: made on first use, dropped at exit; each
``database()`` opened starts from empty tables. The server is the machine's (trust auth); where
none answers, ``dsn`` raises ``PostgresUnavailable``, which the tests turn into a skip, except
in CI (``CI`` set), where they fail: ``.ci/run`` starts the server first."""

from __future__ import annotations

import asyncio
import atexit
import os
import secrets
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from skillstate.storage.postgres import PostgresDatabase, table_names

ADMIN_DSN = os.environ.get(
    "SKILLSTATE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)
"""Where the test databases are made (``SKILLSTATE_TEST_POSTGRES`` to move it)."""
_made: list[str] = []


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server answered at ``ADMIN_DSN``."""


def dsn() -> str:
    """The URL of this process's test database, made on first use."""
    if _made:
        return _made[0]
    name = f"skillstate_test_{os.getpid()}_{secrets.token_hex(3)}"
    try:
        _apart(f'CREATE DATABASE "{name}"')
    except Exception as error:
        raise PostgresUnavailable(f"no PostgreSQL at {ADMIN_DSN}: {error}") from error
    _made.append(ADMIN_DSN.rsplit("/", 1)[0] + "/" + name)
    atexit.register(_apart, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return _made[0]


def _apart(sql: str) -> None:
    """``sql`` run as the administrator on a loop of its own (a test's loop may be running)."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(_admin(sql))
        except BaseException as error:
            failed.append(error)

    apart = threading.Thread(target=run)
    apart.start()
    apart.join()
    if failed:
        raise failed[0]


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(ADMIN_DSN, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@asynccontextmanager
async def database(*, empty: bool = True) -> AsyncIterator[PostgresDatabase]:
    """This process's test database, opened (and migrated), its tables emptied unless
    ``empty`` is False."""
    db = await PostgresDatabase.open(dsn(), min_size=1, max_size=4)
    try:
        if empty:
            await db.pool.execute(
                "TRUNCATE " + ", ".join(t for t in table_names() if t != "skillstate_schema")
            )
        yield db
    finally:
        await db.close()
