"""``skillstate archive``: what the archive in the data directory holds, read from its files.

The archive keeps, exactly, every span the gateway collapsed or compacted (docs/archive.md).
These commands open the data directory's stores themselves (``<data_dir>/skillstate.db`` for
the index, ``<data_dir>/archive/`` for the blobs), the same files a running gateway uses, with
the same bounds (``archive_ttl_days``, ``archive_max_mb``). ``get`` and ``search`` read spans,
and a read is a use: it renews the span's TTL. ``stats`` and ``list`` only look.

Exit status: 0 done, 1 nothing found (an unknown or expired ref, a search without a match) or
the archive cannot be opened, 2 a usage or config error.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from skillstate.cli.options import command_flags, load, settings_options
from skillstate.cli.table import byte_size, print_table
from skillstate.config import Settings
from skillstate.support import jsonio

if TYPE_CHECKING:
    from skillstate.storage import SQLiteArchiveStore, Stores

T = TypeVar("T")

_LIST_COLUMNS = ("REF", "SESSION", "TURNS", "SIZE", "AGE", "")
_SEARCH_LIMIT = 20000
"""Characters of one span's matches that ``search`` prints at most."""


class _NoMatch(Exception):
    """Nothing to print: exit 1 after what was printed (a search without a match)."""


@click.group("archive")
def archive_command() -> None:
    """Inspect the archive: the exact spans the gateway collapsed or compacted.

    It reads the data directory (--data-dir, `data_dir` in the config, else
    ~/.local/share/skillstate). A span unused for `archive_ttl_days` (7) expires; past
    `archive_max_mb` (500) MiB of blob files, the least recently used are evicted.
    """


def _json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(command)


@archive_command.command("stats")
@settings_options
@_json_option
def stats_command(as_json: bool, **params: Any) -> None:
    """How much the archive holds: index entries, distinct refs, bytes of blob files on disk
    against the quota, the oldest and newest entry, the TTL, and how many refs expired."""
    settings = load(command_flags(params))
    doc = _run(settings, lambda opened: _stats(opened, settings))
    if as_json:
        click.echo(jsonio.dumps_str(doc))
        return
    if not doc["entries"]:
        click.echo(f"no archive entries in {doc['data_dir']}")
    quota = doc["max_bytes"]
    used = doc["bytes_on_disk"]
    rows = [
        ("data directory", str(doc["data_dir"])),
        ("entries", str(doc["entries"])),
        ("refs", f"{doc['refs']} ({doc['expired_refs']} expired or evicted)"),
        ("spans", byte_size(doc["span_bytes"]) + " before compression"),
        ("on disk", f"{byte_size(used)} of {byte_size(quota)} ({100 * used / quota:.1f}%)"),
        ("oldest", _when(doc["oldest"])),
        ("newest", _when(doc["newest"])),
        ("ttl", f"{doc['ttl_days']:g} days after the last use"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        click.echo(f"{name:<{width}}  {value}")


@archive_command.command("list")
@click.option("--session", metavar="ID", help="Only this session's entries.")
@click.option(
    "--limit",
    metavar="N",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="At most N entries, newest first.",
)
@settings_options
@_json_option
def list_command(session: str | None, limit: int, as_json: bool, **params: Any) -> None:
    """List the index entries, newest first: ref, session, turns (or "output" for a tool
    output a lane compacted), size of the span, age, and "expired" where its blob is gone
    (expired or evicted: `get` cannot return it, `cleanup` drops the entry)."""
    settings = load(command_flags(params))
    rows = _run(settings, lambda opened: _list(opened, session, limit))
    if as_json:
        click.echo(jsonio.dumps_str({"entries": rows}))
        return
    if not rows:
        click.echo("no archive entries" + (f" for session {session}" if session else ""))
        return
    now = time.time()
    print_table([_LIST_COLUMNS, *(_list_row(row, now) for row in rows)], right=(3, 4))


@archive_command.command("get")
@click.argument("ref")
@settings_options
@click.option(
    "--json", "as_json", is_flag=True, help="Print the span's canonical messages as JSON."
)
def get_command(ref: str, as_json: bool, **params: Any) -> None:
    """Print the span archived under REF exactly (its text, as `recall` reads it), or with
    --json its canonical messages. Exit 1 when REF is unknown or expired. Reading renews it."""
    settings = load(command_flags(params))
    text = _run(settings, lambda opened: _get(opened, ref, as_json))
    # A command's output that was not UTF-8 is kept with its other bytes as lone surrogates
    # (integrations.shell.run): printed as the bytes it was, never an encoding error.
    click.echo(text.encode("utf-8", "surrogateescape"), nl=False)


@archive_command.command("search")
@click.argument("query")
@click.option("--session", metavar="ID", help="Only the spans of this session.")
@click.option(
    "--context",
    metavar="N",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Lines shown around each match.",
)
@settings_options
def search_command(query: str, session: str | None, context: int, **params: Any) -> None:
    """Print the lines of the archived spans that match QUERY, with N lines of context, one
    block per span (`12:` a matching line, `11-` a context line). A line matches when it holds
    QUERY or all of its words, case-insensitive. Exit 1 when no line matches."""
    if not query.strip():
        raise click.BadParameter("is empty", param_hint="QUERY")
    settings = load(command_flags(params))
    try:
        click.echo(_run(settings, lambda opened: _search(opened, query, session, context)))
    except _NoMatch as nothing:
        click.echo(str(nothing), err=True)
        raise click.exceptions.Exit(1) from None


@archive_command.command("cleanup")
@settings_options
@_json_option
def cleanup_command(as_json: bool, **params: Any) -> None:
    """Delete the expired blobs now (the gateway also does it as it writes), then the index
    entries whose blob is gone (expired or evicted); print what went."""
    settings = load(command_flags(params))
    done = _run(settings, _cleanup)
    if as_json:
        click.echo(jsonio.dumps_str(done))
        return
    for ref in done["expired_blobs"]:
        click.echo(f"expired blob {ref}")
    for ref in done["dropped_refs"]:
        click.echo(f"dropped entries of {ref}")
    blobs, rows = len(done["expired_blobs"]), done["dropped_rows"]
    click.echo(
        f"{blobs} expired {_plural(blobs, 'blob')} deleted, "
        f"{rows} index {_plural(rows, 'entry', 'entries')} dropped"
    )


# --- the work, over the opened stores ---------------------------------------------------------


class _Opened:
    """The stores of one data directory, as the commands use them."""

    def __init__(self, stores: Stores, disk: SQLiteArchiveStore) -> None:
        from skillstate.archive import Archive

        self.stores = stores
        self.disk = disk
        self.archive = Archive(stores.archive)


@contextlib.asynccontextmanager
async def _opened(settings: Settings) -> AsyncIterator[_Opened | None]:
    """The data directory's stores, or None where nothing was ever kept there (opening would
    create an empty database)."""
    from skillstate.storage import DB_NAME, open_stores

    data_dir = Path(settings.data_dir)
    if not (data_dir / DB_NAME).is_file():
        yield None
        return
    options = settings.store_options()
    stores = await open_stores(data_dir, options=options)
    try:
        if stores.degraded or stores.disk_archive is None:
            raise click.ClickException(
                f"cannot open the archive in {data_dir}: {stores.degraded or 'no store'}"
            )
        yield _Opened(stores, stores.disk_archive)
    finally:
        await stores.close()


def _run(settings: Settings, work: Callable[[_Opened | None], Coroutine[Any, Any, T]]) -> T:
    async def main() -> T:
        async with _opened(settings) as opened:
            return await work(opened)

    return asyncio.run(main())


async def _stats(opened: _Opened | None, settings: Settings) -> dict[str, Any]:
    entries = [] if opened is None else await opened.disk.all_entries()
    sizes = {entry.ref: entry.size for entry in entries}
    kept = set() if opened is None else await opened.disk.kept(sizes)
    created = [entry.created for entry in entries]
    return {
        "data_dir": str(settings.data_dir),
        "entries": len(entries),
        "refs": len(sizes),
        "expired_refs": len(sizes) - len(kept),
        "span_bytes": sum(sizes.values()),
        "bytes_on_disk": 0 if opened is None else await opened.disk.blobs.usage(),
        "max_bytes": settings.archive_max_mb * 1024 * 1024,
        "oldest": min(created, default=None),
        "newest": max(created, default=None),
        "ttl_days": settings.archive_ttl_days,
    }


async def _list(opened: _Opened | None, session: str | None, limit: int) -> list[dict[str, Any]]:
    if opened is None:
        return []
    entries = await opened.disk.all_entries(_session(session), limit=limit)
    kept = await opened.disk.kept({entry.ref for entry in entries})
    return [
        {
            "ref": entry.ref,
            "session": entry.session,
            "first_turn": entry.first_turn,
            "last_turn": entry.last_turn,
            "summary": entry.summary,
            "size": entry.size,
            "created": entry.created,
            "expired": entry.ref not in kept,
        }
        for entry in entries
    ]


async def _get(opened: _Opened | None, ref: str, as_json: bool) -> str:
    from skillstate.archive import encode_message, is_ref, span_text

    if not is_ref(ref):
        raise click.ClickException(f"{ref[:80]!r} is not an archive ref (ar_ and 24 hex digits)")
    messages = None if opened is None else await opened.archive.span(ref)
    if messages is None:
        raise click.ClickException(f"no archived span {ref}: it is unknown, or it expired")
    if as_json:
        doc = {"ref": ref, "messages": [encode_message(message) for message in messages]}
        return jsonio.dumps_str(doc) + "\n"
    text = span_text(messages)
    return text if text.endswith("\n") else text + "\n"


async def _search(opened: _Opened | None, query: str, session: str | None, context: int) -> str:
    from skillstate.archive import search

    entries = [] if opened is None else await opened.disk.all_entries(_session(session))
    by_ref: dict[str, list[str]] = {}
    for entry in reversed(entries):  # oldest first
        by_ref.setdefault(entry.ref, [])
        if entry.session not in by_ref[entry.ref]:
            by_ref[entry.ref].append(entry.session)
    blocks: list[str] = []
    expired = 0
    for ref, sessions in by_ref.items():
        text = None if opened is None else await opened.archive.text(ref)
        if text is None:
            expired += 1
            continue
        found = search(text, query, context=context, limit=_SEARCH_LIMIT)
        if found.matches:
            blocks.append(f"== {ref} (session {', '.join(sessions)})\n{found.render()}")
    skipped = f" ({expired} expired {_plural(expired, 'span')} not searched)" if expired else ""
    if not blocks:
        searched = len(by_ref) - expired
        raise _NoMatch(
            f'no line matches "{query}" in {searched} archived {_plural(searched, "span")}{skipped}'
        )
    return "\n\n".join(blocks) + (f"\n\n[{skipped.strip(' ()')}]" if skipped else "")


async def _cleanup(opened: _Opened | None) -> dict[str, Any]:
    if opened is None:
        return {"expired_blobs": [], "dropped_refs": [], "dropped_rows": 0}
    done = await opened.disk.cleanup()
    return {
        "expired_blobs": list(done.expired_blobs),
        "dropped_refs": list(done.dropped_refs),
        "dropped_rows": done.dropped_rows,
    }


# --- formatting -------------------------------------------------------------------------------


def _session(session: str | None) -> str | None:
    from skillstate.storage import MAX_SESSION_CHARS

    if session is not None and not 0 < len(session) <= MAX_SESSION_CHARS:
        raise click.BadParameter(f"must be 1 to {MAX_SESSION_CHARS} characters", param_hint="ID")
    return session


def _list_row(row: dict[str, Any], now: float) -> Sequence[str]:
    first, last = row["first_turn"], row["last_turn"]
    turns = "output" if first < 0 else (str(first) if first == last else f"{first}-{last}")
    return (
        row["ref"],
        row["session"],
        turns,
        byte_size(row["size"]),
        _age(now - row["created"]),
        "expired" if row["expired"] else "",
    )


def _plural(count: int, one: str, many: str | None = None) -> str:
    return one if count == 1 else (many or one + "s")


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _when(seconds: object) -> str:
    """Local time, to the second."""
    if not isinstance(seconds, int | float):
        return "-"
    return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M:%S")
