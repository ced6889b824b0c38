"""``skillstate db status|migrate`` against a real PostgreSQL: a database without the schema is
told to migrate (exit 1), ``migrate`` applies it once, ``status`` then says it is up to date;
without a store, or with one that cannot be reached, a clear error, its password masked."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from click.testing import CliRunner

from skillstate.cli.main import cli
from skillstate.storage.postgres import SCHEMA_VERSION, table_names


@pytest.fixture
def bare(postgres_url: str) -> str:
    """The test database with none of the schema's tables."""
    url = postgres_url

    async def drop() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute("DROP TABLE IF EXISTS " + ", ".join(table_names()))
        finally:
            await conn.close()

    asyncio.run(drop())
    return url


def db(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(cli, ["db", *args])
    return done.exit_code, done.output


def test_status_then_migrate_then_status(bare: str) -> None:
    code, said = db("status", "--store", bare)
    assert code == 1 and f"schema version 0, this gateway's {SCHEMA_VERSION}" in said
    assert "run `skillstate db migrate`" in said
    code, said = db("migrate", "--store", bare)
    assert code == 0 and f"0 -> {SCHEMA_VERSION}, applied" in said
    code, said = db("migrate", "--store", bare)
    assert code == 0 and "nothing to apply" in said
    code, said = db("status", "--store", bare)
    assert code == 0 and "up to date" in said


def test_without_a_store_or_with_one_out_of_reach_it_says_so() -> None:
    code, said = db("status", "--data-dir", "/tmp/skillstate-db-cli-none")
    assert code == 1 and "no store is set" in said
    code, said = db("migrate", "--store", "postgresql://someone:hunter2@127.0.0.1:9/none")
    assert code == 1 and "cannot be reached" in said
    assert "hunter2" not in said and "someone:***@" in said
