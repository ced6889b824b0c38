"""Columns of text as the commands print them: each as wide as its widest cell, two spaces
between, the given columns aligned right (numbers), the rest left."""

from __future__ import annotations

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
