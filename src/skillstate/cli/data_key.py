"""``skillstate keys data-key`` and ``skillstate keys rotate-data``: the key that seals data at
rest (``storage.data_key``, ``storage.sealing``). ``data-key`` puts a new key first in the key
file; ``rotate-data`` seals every record of the store under that key, batch by batch, while
the gateway goes on serving (``storage.resealing``), and records it in the audit log
(``data.rotate``: who ran it, when, under which key)."""

from __future__ import annotations

import asyncio
import getpass
import time
from pathlib import Path
from typing import Any

import click

from skillstate.cli.options import command_flags, load, settings_options
from skillstate.config import Settings
from skillstate.storage.audit import AuditEntry, AuditStore
from skillstate.storage.data_key import DataKeyError, add_key
from skillstate.storage.resealing import Resealed
from skillstate.storage.sealing import Sealer
from skillstate.support.urls import shown_url


@click.command("data-key")
@click.option(
    "--file",
    "key_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The key file (default: the setting data_key_file).",
)
@settings_options
def data_key_command(key_file: Path | None, **params: Any) -> None:
    """Make a new data key and put it first in the key file, which is made owner-only where
    missing. Gateways started after it seal with the new key and still open what the older
    keys sealed; `rotate-data` then seals the rest under it."""
    if key_file is None:
        key_file = load(command_flags(params)).data_key_file
    if key_file is None:
        raise click.UsageError("no key file: give --file or set data_key_file")
    try:
        made = add_key(key_file)
    except DataKeyError as error:
        raise click.ClickException(str(error)) from None
    click.echo(made)
    click.echo(
        f"data key {made} is first in {key_file}: restart the gateways, then run"
        " `skillstate keys rotate-data`; keep every key until that has finished",
        err=True,
    )


@click.command("rotate-data")
@settings_options
def rotate_data_command(**params: Any) -> None:
    """Seal every record of the store under the current data key, batch by batch, while the
    gateway goes on serving; audited as data.rotate."""
    settings = load(command_flags(params))
    try:
        sealer = settings.store_options().sealer
    except DataKeyError as error:
        raise click.ClickException(str(error)) from None
    if sealer is None:
        raise click.ClickException(
            "no data key is configured: set data_key_file (`skillstate keys data-key` makes"
            " one) or SKILLSTATE_DATA_KEY"
        )
    try:
        done = asyncio.run(_rotate(settings, sealer))
    except click.ClickException:
        raise
    except Exception as error:
        where = shown_url(settings.store) if settings.store else str(settings.data_dir)
        raise click.ClickException(f"{where}: {type(error).__name__}: {error}") from None
    click.echo(
        f"{done.resealed} records sealed again, {done.current} were already under data key"
        f" {sealer.key_id}"
    )
    if len(sealer.key_ids) > 1:
        older = ", ".join(sealer.key_ids[1:])
        click.echo(
            f"once every gateway runs with key {sealer.key_id} first, the older keys ({older})"
            " may leave the key file",
            err=True,
        )


def _progress(table: str, resealed: int, current: int) -> None:
    click.echo(f"{table}: {resealed} sealed again, {current} already current", err=True)


async def _rotate(settings: Settings, sealer: Sealer) -> Resealed:
    """Reseal the store of ``settings`` and record it in that store's audit log."""
    if settings.store:
        from skillstate.storage.audit import PostgresAudit
        from skillstate.storage.postgres import PostgresDatabase
        from skillstate.storage.resealing import reseal_postgres

        shared = await PostgresDatabase.open(settings.store, max_size=2)
        try:
            done = await reseal_postgres(shared, sealer, _progress)
            await _audit(PostgresAudit(shared), sealer, done)
        finally:
            await shared.close()
        return done
    from skillstate.storage.audit import SQLiteAudit
    from skillstate.storage.blobs import BlobStore
    from skillstate.storage.resealing import reseal_sqlite
    from skillstate.storage.sqlite import DB_NAME, SQLiteDatabase
    from skillstate.storage.stores import ARCHIVE_DIR

    data_dir = Path(settings.data_dir)
    options = settings.store_options()
    local = await SQLiteDatabase.open(data_dir / DB_NAME)
    try:
        blobs = BlobStore(
            data_dir / ARCHIVE_DIR,
            max_bytes=options.archive_max_bytes,
            ttl=options.archive_ttl,
            sealer=sealer,
        )
        done = await reseal_sqlite(local, blobs, sealer, _progress)
        await _audit(SQLiteAudit(local), sealer, done)
    finally:
        await local.close()
    return done


async def _audit(audit: AuditStore, sealer: Sealer, done: Resealed) -> None:
    detail = {
        "user": getpass.getuser(),
        "resealed": done.resealed,
        "current": done.current,
        "keys": list(sealer.key_ids),
    }
    await audit.append([AuditEntry(time.time(), "cli", "data.rotate", sealer.key_id, detail)])
