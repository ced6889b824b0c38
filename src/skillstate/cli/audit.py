"""``skillstate audit``: the audit log of admin actions (``storage.audit``), read from the store
itself (the shared database of ``store``, else the SQLite file under the data directory), with
no gateway running and nothing written."""

from __future__ import annotations

import asyncio
import datetime
import sqlite3
from pathlib import Path
from typing import Any

import click

from skillstate.cli.options import command_flags, load, settings_options
from skillstate.cli.table import local_time
from skillstate.storage.audit import DEFAULT_LIMIT, AuditEntry, AuditQuery
from skillstate.storage.sqlite import DB_NAME
from skillstate.support import jsonio
from skillstate.support.urls import shown_url


def _moment(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """``--since`` / ``--until``: ISO 8601, local time unless it names a zone."""
    if value is None:
        return None
    try:
        moment = datetime.datetime.fromisoformat(value.strip())
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 date or time") from None
    return (moment if moment.tzinfo else moment.astimezone()).timestamp()


@click.command("audit", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--since",
    metavar="WHEN",
    callback=_moment,
    help="Only actions from WHEN on (ISO 8601: 2026-12-01T09:00; local time unless it names "
    "a zone, as in 09:00Z).",
)
@click.option("--until", metavar="WHEN", callback=_moment, help="Only actions before WHEN.")
@click.option("--action", metavar="NAME", help="Only this action (session.reset, ...).")
@click.option(
    "--limit",
    metavar="N",
    type=click.IntRange(min=1),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="At most N entries.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@settings_options
def audit_command(
    since: float | None,
    until: float | None,
    action: str | None,
    limit: int,
    as_json: bool,
    **params: Any,
) -> None:
    """Print the audit log of admin actions (keys made and revoked, sessions reset or
    collapsed), newest first: when, who (an admin's key, the gateway's token, a local program,
    the command line), the action and its target.
    It reads the store itself (`store`, else the SQLite file under the data directory)."""
    settings = load(command_flags(params))
    query = AuditQuery(since, until, action, limit)
    if settings.store:
        where = shown_url(settings.store)
        found = asyncio.run(_postgres(settings.store, query))
    else:
        path = Path(settings.data_dir) / DB_NAME
        where = str(path)
        found = _sqlite(path, query)
    if as_json:
        click.echo(jsonio.dumps_str({"audit": [e.to_json() for e in found or ()]}))
        return
    if not found:
        said = "no audit log yet" if found is None else "no audit entries"
        click.echo(f"{said} in {where}")
        return
    for entry in found:
        click.echo(_line(entry))


def _line(entry: AuditEntry) -> str:
    detail = " ".join(f"{key}={_shown(value)}" for key, value in entry.detail.items())
    return "  ".join(
        part
        for part in (local_time(entry.when), entry.who, entry.action, entry.target, detail)
        if part
    )


def _shown(value: object) -> str:
    return value if isinstance(value, str) else jsonio.dumps_str(value)


def _sqlite(path: Path, query: AuditQuery) -> list[AuditEntry] | None:
    """The entries in the file at ``path``, opened read-only (None: no file, or none of the
    audit log in it yet)."""
    from skillstate.storage.audit import select_sqlite

    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            made = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit'"
            ).fetchone()
            return select_sqlite(query, conn) if made else None
        finally:
            conn.close()
    except sqlite3.Error as error:
        raise click.ClickException(f"{path}: {error}") from None


async def _postgres(url: str, query: AuditQuery) -> list[AuditEntry] | None:
    from skillstate.storage.audit import PostgresAudit
    from skillstate.storage.postgres import PostgresDatabase

    try:
        db = await PostgresDatabase.open_unmigrated(url)
    except (OSError, RuntimeError) as error:
        raise click.ClickException(f"{shown_url(url)} cannot be reached: {error}") from None
    except Exception as error:
        raise click.ClickException(f"{shown_url(url)}: {type(error).__name__}: {error}") from None
    try:
        if await db.pool.fetchval("SELECT to_regclass('skillstate_audit')") is None:
            return None
        return await PostgresAudit(db).entries(query)
    finally:
        await db.close()
