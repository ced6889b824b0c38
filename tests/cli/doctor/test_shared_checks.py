"""doctor's checks of the shared store and Redis, against the machine's PostgreSQL and Redis
and against ports where nothing listens: reachable with the schema version and a latency, a
schema older or newer than this gateway's, out of reach with the fix; neither set is
information, never a problem."""

from __future__ import annotations

from pathlib import Path

from skillstate.cli.doctor.shared import check_redis, check_store
from skillstate.config import Settings, load_settings
from skillstate.storage.postgres import SCHEMA_VERSION, table_names
from skillstate.testing.postgres import database


def settings(tmp_path: Path, **values: object) -> Settings:
    cli = {"data_dir": str(tmp_path / "data"), **values}
    return load_settings(cli=cli, environ={"HOME": str(tmp_path)})


async def test_neither_set_is_information(tmp_path: Path) -> None:
    store, redis = await check_store(settings(tmp_path)), await check_redis(settings(tmp_path))
    assert store.ok is None and "SQLite under" in store.detail
    assert redis.ok is None and "own rate limits" in redis.detail


async def test_a_reachable_store_at_this_schema(tmp_path: Path, postgres_url: str) -> None:
    async with database():  # migrated to this gateway's version
        check = await check_store(settings(tmp_path, store=postgres_url))
    assert check.ok is True, check
    assert f"schema version {SCHEMA_VERSION} (" in check.detail and " ms)" in check.detail


async def test_a_schema_older_or_newer_than_this_gateway(tmp_path: Path, postgres_url: str) -> None:
    async with database() as db:
        await db.pool.execute("INSERT INTO skillstate_schema VALUES ($1, 0)", SCHEMA_VERSION + 1)
        try:
            newer = await check_store(settings(tmp_path, store=postgres_url))
        finally:
            await db.pool.execute(
                "DELETE FROM skillstate_schema WHERE version > $1", SCHEMA_VERSION
            )
        await db.pool.execute("DROP TABLE IF EXISTS " + ", ".join(table_names()))
        try:
            older = await check_store(settings(tmp_path, store=postgres_url))
        finally:
            await db.migrate()
    assert newer.ok is False and "newer than this gateway's" in newer.detail
    assert newer.fix == "upgrade skillstate"
    assert older.ok is None and "schema version 0" in older.detail
    assert "migrated at start" in older.detail and older.fix == "skillstate db migrate"


async def test_a_store_out_of_reach_is_a_problem_with_its_password_hidden(
    tmp_path: Path,
) -> None:
    url = "postgresql://app:hunter2@127.0.0.1:9/none"
    check = await check_store(settings(tmp_path, store=url))
    assert check.ok is False and "cannot be reached" in check.detail
    assert "hunter2" not in check.detail and "app:***@" in check.detail
    assert check.fix is not None and "--store" in check.fix


async def test_redis_reachable_and_out_of_reach(tmp_path: Path, redis_url: str) -> None:
    up = await check_redis(settings(tmp_path, redis=redis_url))
    down = await check_redis(settings(tmp_path, redis="redis://:hunter2@127.0.0.1:9/0"))
    assert up.ok is True and up.detail.endswith(" ms)")
    assert down.ok is False and "cannot be reached" in down.detail
    assert "hunter2" not in down.detail and down.fix == "start Redis"
