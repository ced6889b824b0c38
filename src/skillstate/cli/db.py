"""``skillstate db``: the store's schema (``storage.postgres`` for a shared store, else
``storage.sqlite`` under the data directory): where it stands, and bringing it up to this
gateway's."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import click

from skillstate.cli.options import command_flags, load, settings_options
from skillstate.storage.sqlite import DB_NAME
from skillstate.support.urls import shown_url


@click.group("db", context_settings={"help_option_names": ["-h", "--help"]})
def db_command() -> None:
    """The schema of the store (the shared database of `store`, else the SQLite file under
    the data directory): `status` says where it stands, `migrate` brings it up to this
    gateway's, as the gateway does itself at start."""


@db_command.command("status")
@settings_options
def status_command(**params: Any) -> None:
    """Print the store's schema version and this gateway's; exit 1 where they differ."""
    settings = load(command_flags(params))
    if not settings.store:
        _sqlite_status(Path(settings.data_dir) / DB_NAME)
        return
    from skillstate.storage.postgres import SCHEMA_VERSION

    url = settings.store
    found = asyncio.run(_version(url))
    _said(shown_url(url), found, SCHEMA_VERSION)


@db_command.command("migrate")
@settings_options
def migrate_command(**params: Any) -> None:
    """Apply the migrations the store lacks (each in one transaction; instances starting
    together apply each once). A store newer than this gateway is left as it is."""
    settings = load(command_flags(params))
    if not settings.store:
        _sqlite_migrate(Path(settings.data_dir) / DB_NAME)
        return
    from skillstate.storage.postgres import SchemaTooNew

    url = settings.store
    try:
        migrated = asyncio.run(_migrate(url))
    except SchemaTooNew as error:
        raise click.ClickException(str(error)) from None
    _applied(shown_url(url), migrated.before, migrated.after)


def _said(where: str, found: int, ours: int) -> None:
    said = "up to date" if found == ours else "run `skillstate db migrate`"
    if found > ours:
        said = "newer than this gateway: upgrade skillstate"
    click.echo(f"{where}: schema version {found}, this gateway's {ours} ({said})")
    if found != ours:
        raise SystemExit(1)


def _applied(where: str, before: int, after: int) -> None:
    if before == after:
        click.echo(f"{where}: schema version {after}, nothing to apply")
    else:
        click.echo(f"{where}: schema version {before} -> {after}, applied")


def _sqlite_status(path: Path) -> None:
    from skillstate.storage.sqlite import SCHEMA_VERSION, schema_version

    found = _sqlite_read(path, schema_version)
    if found is None:
        click.echo(f"{path}: no database yet (made at start, at schema version {SCHEMA_VERSION})")
        return
    _said(str(path), found, SCHEMA_VERSION)


def _sqlite_migrate(path: Path) -> None:
    from skillstate.storage.sqlite import SQLiteDatabase, schema_version

    before = _sqlite_read(path, schema_version) or 0

    async def opened() -> None:
        await (await SQLiteDatabase.open(path)).close()  # opening applies what is missing

    try:
        asyncio.run(opened())
    except (OSError, sqlite3.Error) as error:
        raise click.ClickException(f"{path}: {error}") from None
    _applied(str(path), before, _sqlite_read(path, schema_version) or 0)


def _sqlite_read(path: Path, read: Any) -> int | None:
    try:
        return int(read(path)) if path.exists() else None
    except (OSError, sqlite3.Error) as error:
        raise click.ClickException(f"{path}: {error}") from None


async def _version(url: str) -> int:
    from skillstate.storage.postgres import PostgresDatabase

    db: PostgresDatabase = await _opened(url, PostgresDatabase.open_unmigrated)
    try:
        return await db.schema_version()
    finally:
        await db.close()


async def _migrate(url: str) -> Any:
    from skillstate.storage.postgres import PostgresDatabase

    db = await _opened(url, PostgresDatabase.open_unmigrated)
    try:
        return await db.migrate()
    finally:
        await db.close()


async def _opened(url: str, opener: Any) -> Any:
    try:
        return await opener(url)
    except (OSError, RuntimeError) as error:
        raise click.ClickException(f"{shown_url(url)} cannot be reached: {error}") from None
    except Exception as error:
        raise click.ClickException(f"{shown_url(url)}: {type(error).__name__}: {error}") from None
