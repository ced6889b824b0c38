"""``skillstate db status|migrate`` against a real PostgreSQL: a database without the schema is
told to migrate (exit 1), ``migrate`` applies it once, ``status`` then says it is up to date;
with one that cannot be reached, a clear error, its password masked; without a store, the
same for the SQLite file under the data directory."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import asyncpg
import pytest
from click.testing import CliRunner

from skillstate.cli.main import cli
from skillstate.storage.postgres import SCHEMA_VERSION, table_names
from skillstate.storage.sqlite import SCHEMA_VERSION as SQLITE_VERSION


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


def test_a_store_out_of_reach_says_so_with_its_password_masked() -> None:
    code, said = db("migrate", "--store", "postgresql://someone:hunter2@127.0.0.1:9/none")
    assert code == 1 and "cannot be reached" in said
    assert "hunter2" not in said and "someone:***@" in said


def test_without_a_store_the_sqlite_file_under_the_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = data / "skillstate.db"
    code, said = db("status", "--data-dir", str(data))
    assert code == 0 and f"{path}: no database yet" in said
    data.mkdir()
    sqlite3.connect(path).close()  # a file with none of the schema, as at version 0
    code, said = db("status", "--data-dir", str(data))
    assert code == 1 and f"schema version 0, this gateway's {SQLITE_VERSION}" in said
    code, said = db("migrate", "--data-dir", str(data))
    assert code == 0 and f"0 -> {SQLITE_VERSION}, applied" in said
    code, said = db("status", "--data-dir", str(data))
    assert code == 0 and "up to date" in said
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    code, said = db("status", "--data-dir", str(data))
    assert code == 1 and "newer than this gateway" in said
    code, said = db("migrate", "--data-dir", str(data))
    assert code == 1 and "upgrade skillstate" in said
