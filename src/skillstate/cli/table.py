"""Columns of text as the commands print them: each as wide as its widest cell, two spaces
between, the given columns aligned right (numbers), the rest left; sizes and times as the
commands print them (times local, to the second)."""

from __future__ import annotations

import datetime
from collections.abc import Collection, Sequence

import click


def print_table(rows: Sequence[Sequence[str]], right: Collection[int] = ()) -> None:
    """``rows`` (the header first) in aligned columns; ``right``: the columns aligned right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        click.echo("  ".join(cells).rstrip())


def byte_size(count: int) -> str:
    """``512 B``, ``1.5 KiB``, ``3.2 MiB``: a size as the commands print it."""
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


def local_time(seconds: object) -> str:
    """Seconds since the epoch as a local time to the second (``2026-12-03 17:10:20``); ``-``
    for anything else. The gateway and the commands share the machine's clock."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return "-"
    return datetime.datetime.fromtimestamp(seconds).strftime(_SECONDS)


def local_iso(text: object) -> str:
    """An ISO 8601 time (``2026-12-03T16:10:20.123456Z``) as a local time to the second; ``-``
    for anything else. A time without a zone is taken as UTC, as the gateway writes them."""
    if not isinstance(text, str):
        return "-"
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return text
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone().strftime(_SECONDS)


_SECONDS = "%Y-%m-%d %H:%M:%S"
