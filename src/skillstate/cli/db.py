"""``skillstate db``: the shared store's schema (``storage.postgres``): where it stands, and
bringing it up to this gateway's."""

from __future__ import annotations

import asyncio
from typing import Any

import click

from skillstate.cli.options import command_flags, load, settings_options
from skillstate.support.urls import shown_url

_NO_STORE = (
    "no store is set: Σ and the archive are in SQLite under the data directory, whose schema "
    "the gateway brings up itself at start (set --store postgresql://... to share them)"
)


@click.group("db", context_settings={"help_option_names": ["-h", "--help"]})
def db_command() -> None:
    """The schema of the shared store (the `store` setting, a postgresql:// URL): `status`
    says where it stands, `migrate` brings it up to this gateway's."""


@db_command.command("status")
@settings_options
def status_command(**params: Any) -> None:
    """Print the store's schema version and this gateway's; exit 1 where they differ."""
    from skillstate.storage.postgres import SCHEMA_VERSION

    url = _store(params)
    found = asyncio.run(_version(url))
    said = "up to date" if found == SCHEMA_VERSION else "run `skillstate db migrate`"
    if found > SCHEMA_VERSION:
        said = "newer than this gateway: upgrade skillstate"
    click.echo(
        f"{shown_url(url)}: schema version {found}, this gateway's {SCHEMA_VERSION} ({said})"
    )
    if found != SCHEMA_VERSION:
        raise SystemExit(1)


@db_command.command("migrate")
@settings_options
def migrate_command(**params: Any) -> None:
    """Apply the migrations the store lacks (each in one transaction; instances starting
    together apply each once). A store newer than this gateway is left as it is."""
    from skillstate.storage.postgres import SchemaTooNew

    url = _store(params)
    try:
        migrated = asyncio.run(_migrate(url))
    except SchemaTooNew as error:
        raise click.ClickException(str(error)) from None
    if migrated.before == migrated.after:
        click.echo(f"{shown_url(url)}: schema version {migrated.after}, nothing to apply")
    else:
        click.echo(
            f"{shown_url(url)}: schema version {migrated.before} -> {migrated.after}, applied"
        )


def _store(params: dict[str, Any]) -> str:
    url = load(command_flags(params)).store
    if not url:
        raise click.ClickException(_NO_STORE)
    return url


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
