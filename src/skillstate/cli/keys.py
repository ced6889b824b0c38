"""``skillstate keys``: the virtual keys a team's gateway gives its people (``storage.keys``),
made, listed and revoked in the store the gateway uses (the shared database of ``store``, else
the SQLite file under the data directory); a running gateway sees a change within seconds."""

from __future__ import annotations

import asyncio
import datetime
import getpass
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from skillstate.cli.data_key import data_key_command, rotate_data_command
from skillstate.cli.options import command_flags, load, settings_options
from skillstate.storage.audit import AuditEntry, AuditStore
from skillstate.storage.keys import PERIODS, TENANT_RULE, KeyLimits, KeyStore, VirtualKey, made
from skillstate.storage.spend import SpendStore
from skillstate.support.urls import shown_url

T = TypeVar("T")


@click.group("keys", context_settings={"help_option_names": ["-h", "--help"]})
def keys_command() -> None:
    """Virtual keys, one per person or agent, each naming a tenant: `create` shows a new key
    once, `list` shows them all (never their text), `revoke` ends one, `budget` changes what
    one may spend and send; `data-key` and `rotate-data` look after the key that seals data at
    rest. While any key is usable, every request wants a key or the gateway's token; a
    tenant's key may use the models' routes and its own data's only, and its sessions are its
    own."""


def _limit_options(command: Callable[..., None]) -> Callable[..., None]:
    options = (
        click.option(
            "--budget",
            type=float,
            metavar="USD",
            help="What it may spend a period, in USD (priced by the price catalog).",
        ),
        click.option(
            "--period",
            type=click.Choice(PERIODS),
            default="month",
            show_default=True,
            help="The budget's period: a UTC calendar day or month.",
        ),
        click.option("--rpm", type=int, help="Upstream requests it may make a minute."),
        click.option("--tpm", type=int, help="Tokens (input and output asked) a minute."),
    )
    for option in reversed(options):
        command = option(command)
    return command


@keys_command.command("create")
@click.option("--tenant", required=True, help=f"Whose key it is: {TENANT_RULE}.")
@click.option("--admin", is_flag=True, help="The key may use the admin routes too.")
@click.option("--expires", metavar="DATE", help="When it stops working (ISO 8601, UTC).")
@click.option("--models", metavar="PATTERN,...", help="The models it may ask for (glob patterns).")
@_limit_options
@settings_options
def create_command(
    tenant: str,
    admin: bool,
    expires: str | None,
    models: str | None,
    budget: float | None,
    period: str,
    rpm: int | None,
    tpm: int | None,
    **params: Any,
) -> None:
    """Make a key and print it, once: the store keeps only its hash."""
    until = _moment(expires) if expires else None
    patterns = [p.strip() for p in (models or "").split(",") if p.strip()]
    limits = _limits(budget, period, rpm, tpm)
    try:
        text, key = made(tenant, admin=admin, expires=until, models=patterns, limits=limits)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--tenant") from None
    _run(params, lambda stores: stores.keys.add(key), ("key.create", key))
    click.echo(text)
    click.echo(
        f"key {key.id} for tenant {tenant}{' (admin)' if admin else ''}: shown once, keep it",
        err=True,
    )


keys_command.add_command(data_key_command)
keys_command.add_command(rotate_data_command)


@keys_command.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per key.")
@settings_options
def list_command(as_json: bool, **params: Any) -> None:
    """Every key: its id, tenant, whether an admin's, and when made, expiring or revoked; with
    a budget, what its period has spent so far and what requests in flight hold."""
    listed: list[tuple[VirtualKey, Spent | None]] = _run(params, _with_spending)
    if as_json:
        click.echo(json.dumps([_as_json(key, spent) for key, spent in listed], indent=2))
        return
    if not listed:
        click.echo("no keys yet: `skillstate keys create --tenant NAME` makes one")
        return
    for key, spent in listed:
        click.echo(_line(key, spent))


@dataclass(frozen=True, slots=True)
class Spent:
    """What a key's budget period (``period``, UTC) has spent and holds now, in USD."""

    period: str
    spent: float
    held: float


async def _with_spending(stores: _Stores) -> list[tuple[VirtualKey, Spent | None]]:
    from skillstate.economics.allowance import period_of  # the prices: only for a listing

    now = time.time()
    out: list[tuple[VirtualKey, Spent | None]] = []
    for key in await stores.keys.all():
        spent = None
        if key.limits.budget_usd is not None:
            period = period_of(key.limits.period, now)
            tally = await stores.spend.tally(key.id, period, now)
            spent = Spent(period, tally.spent, tally.held)
        out.append((key, spent))
    return out


def _as_json(key: VirtualKey, spent: Spent | None) -> dict[str, Any]:
    shown = key.as_json()
    if spent is not None:
        shown.update(spent_period=spent.period, spent_usd=spent.spent, held_usd=spent.held)
    return shown


@keys_command.command("revoke")
@click.argument("key_id")
@settings_options
def revoke_command(key_id: str, **params: Any) -> None:
    """End the key whose id (from `keys list`) is KEY_ID."""
    now = datetime.datetime.now(datetime.UTC).timestamp()
    key: VirtualKey | None = _run(
        params, lambda stores: stores.keys.revoke(key_id, now), "key.revoke"
    )
    if key is None:
        raise click.ClickException(f"no key has the id {key_id!r} (`skillstate keys list`)")
    click.echo(f"key {key.id} of tenant {key.tenant}: revoked")


@keys_command.command("budget")
@click.argument("key_id")
@_limit_options
@settings_options
def budget_command(
    key_id: str, budget: float | None, period: str, rpm: int | None, tpm: int | None, **params: Any
) -> None:
    """Set what the key whose id is KEY_ID may spend and send, replacing its limits (an option
    left out: none)."""
    limits = _limits(budget, period, rpm, tpm)
    key: VirtualKey | None = _run(
        params, lambda stores: stores.keys.limit(key_id, limits), "budget.set"
    )
    if key is None:
        raise click.ClickException(f"no key has the id {key_id!r} (`skillstate keys list`)")
    click.echo(f"key {key.id} of tenant {key.tenant}: {_limits_said(key.limits) or 'no limits'}")


def _limits(budget: float | None, period: str, rpm: int | None, tpm: int | None) -> KeyLimits:
    try:
        return KeyLimits(budget, period, rpm, tpm)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


def _limits_said(limits: KeyLimits) -> str:
    parts = []
    if limits.budget_usd is not None:
        parts.append(f"budget ${limits.budget_usd:,.2f}/{limits.period}")
    if limits.rpm is not None:
        parts.append(f"rpm {limits.rpm}")
    if limits.tpm is not None:
        parts.append(f"tpm {limits.tpm}")
    return "  ".join(parts)


def _line(key: VirtualKey, spent: Spent | None = None) -> str:
    parts = [key.id, key.tenant, "admin" if key.admin else "tenant", f"made {_day(key.created)}"]
    if key.expires is not None:
        parts.append(f"expires {_day(key.expires)}")
    if key.revoked is not None:
        parts.append(f"revoked {_day(key.revoked)}")
    if key.models:
        parts.append("models " + ",".join(key.models))
    if key.limits.any:
        parts.append(_limits_said(key.limits))
    if spent is not None:
        parts.append(f"{spent.period}: ${spent.spent:,.4f} spent, ${spent.held:,.4f} held")
    return "  ".join(parts)


def _day(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.isoformat(timespec="minutes").replace("+00:00", "Z")


def _moment(text: str) -> float:
    try:
        moment = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not an ISO 8601 date", param_hint="--expires"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


@dataclass(frozen=True, slots=True)
class _Stores:
    """The keys, the audit log and the keys' spending of one store."""

    keys: KeyStore
    audit: AuditStore
    spend: SpendStore


def _run(
    params: dict[str, Any],
    work: Callable[[_Stores], Awaitable[T]],
    audited: str | tuple[str, VirtualKey] | None = None,
) -> T:
    """``work`` on the store's keys; ``audited``: the action to record in the store's audit
    log with the key it made or ended (the key ``work`` gives, for a revocation)."""
    settings = load(command_flags(params))

    async def run() -> T:
        async with _store(settings.store, Path(settings.data_dir)) as stores:
            done = await work(stores)
            if audited is not None:
                action, key = audited if isinstance(audited, tuple) else (audited, done)
                if isinstance(key, VirtualKey):
                    detail = {"tenant": key.tenant, "admin": key.admin, "user": getpass.getuser()}
                    if key.limits.any or action == "budget.set":
                        detail.update(key.limits.as_json())
                    entry = AuditEntry(time.time(), "cli", action, key.id, detail)
                    await stores.audit.append([entry])
            return done

    try:
        return asyncio.run(run())
    except click.ClickException:
        raise
    except Exception as error:
        where = shown_url(settings.store) if settings.store else str(settings.data_dir)
        raise click.ClickException(f"{where}: {type(error).__name__}: {error}") from None


@asynccontextmanager
async def _store(url: str, data_dir: Path) -> AsyncIterator[_Stores]:
    """The keys, the audit log and the spending of the shared database of ``url``, else of
    the SQLite file under ``data_dir``."""
    if url:
        from skillstate.storage.audit import PostgresAudit
        from skillstate.storage.keys import PostgresKeyStore
        from skillstate.storage.postgres import PostgresDatabase
        from skillstate.storage.spend import PostgresSpendStore

        shared = await PostgresDatabase.open(url, max_size=2)
        try:
            yield _Stores(
                PostgresKeyStore(shared), PostgresAudit(shared), PostgresSpendStore(shared)
            )
        finally:
            await shared.close()
        return
    from skillstate.storage.audit import SQLiteAudit
    from skillstate.storage.keys import SqliteKeyStore
    from skillstate.storage.spend import SqliteSpendStore
    from skillstate.storage.sqlite import DB_NAME, SQLiteDatabase

    local = await SQLiteDatabase.open(data_dir / DB_NAME)
    try:
        yield _Stores(SqliteKeyStore(local), SQLiteAudit(local), SqliteSpendStore(local))
    finally:
        await local.close()
