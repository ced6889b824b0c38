"""Folded listings: ``ls``, ``ls -R``, ``find`` and ``tree`` output, and the entry runs of
``git status``, with the names grouped by directory and long groups counted.

What is shown of a group is its first names in order; the rest are counted where they were,
so a reader knows how many there are and where to look.
"""

from __future__ import annotations

import posixpath

NAMES = 8
"""Names shown per directory before the rest are counted."""
RUN = 20
"""Entries of a ``git status`` run shown whole."""
DEPTH = 2
"""Levels of a ``tree`` shown."""
GROUPS = 30
"""Directories a path listing shows before it groups by fewer levels."""


def names(items: list[str], shown: int = NAMES) -> str:
    """``a, b, c … N more``."""
    text = ", ".join(items[:shown])
    return text + (f" … {len(items) - shown:,} more" if len(items) > shown else "")


def listing(lines: list[str]) -> str:
    """``ls -R`` blocks, ``find`` paths, or plain names, each grouped and counted."""
    if any(line.endswith(":") for line in lines) and "" in lines:
        return _recursive(lines)
    if sum("/" in line for line in lines) * 2 > len(lines):
        return _paths(lines)
    return f"{len(lines):,} entries: {names(lines, NAMES * 4)}"


def _recursive(lines: list[str]) -> str:
    out: list[str] = []
    block: list[str] = []
    head = ""
    for line in [*lines, ""]:
        if not line:
            if head or block:
                out.append(f"{head or '.'} ({len(block):,}): {names(block)}")
            head, block = "", []
        elif line.endswith(":") and not block and not head:
            head = line[:-1]
        else:
            block.append(line)
    return "\n".join(out)


def _paths(lines: list[str]) -> str:
    """Paths grouped by their directory; with more than ``GROUPS`` directories, by their
    directory cut to fewer levels (``./.git/objects/`` for all the objects), shallowest last."""
    groups = _grouped(lines, None)
    for depth in (4, 3, 2, 1):
        if len(groups) <= GROUPS:
            break
        groups = _grouped(lines, depth)
    directories = len({posixpath.dirname(line.rstrip("/")) for line in lines})
    out = [f"{len(lines):,} paths in {directories:,} directories:"]
    out += [f"{parent}/ ({len(found):,}): {names(found)}" for parent, found in groups.items()]
    return "\n".join(out)


def _grouped(lines: list[str], depth: int | None) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for line in lines:
        parent, name = posixpath.split(line.rstrip("/"))
        parts = parent.split("/") if parent else ["."]
        if depth is not None and len(parts) > depth:
            parent, name = "/".join(parts[:depth]), "/".join([*parts[depth:], name])
        groups.setdefault(parent or ".", []).append(name or line)
    return groups


def fold_entries(run: list[str]) -> list[str]:
    """A ``git status`` run of entries, whole when short, else its first entries and the
    rest counted by top directory."""
    if len(run) <= RUN:
        return run
    shown = run[: RUN // 2]
    counts: dict[str, int] = {}
    for entry in run[RUN // 2 :]:
        path = entry.strip().split()[-1]
        top = path.split("/", 1)[0] + ("/" if "/" in path else "")
        counts[top] = counts.get(top, 0) + 1
    summary = ", ".join(f"{top} ({count:,})" for top, count in counts.items())
    return [*shown, f"\t… {len(run) - len(shown):,} more: {summary}"]


def tree(lines: list[str]) -> str:
    """The first ``DEPTH`` levels of ``tree`` output; each run of deeper entries counted."""
    out: list[str] = []
    hidden = 0
    for line in lines:
        cut = line.find("── ")
        depth = 0 if cut < 0 else (cut + 3) // 4
        if depth > DEPTH:
            hidden += 1
            continue
        if hidden:
            out.append(f"{' ' * 4 * DEPTH}… {hidden:,} deeper entries")
            hidden = 0
        out.append(line)
    if hidden:
        out.append(f"{' ' * 4 * DEPTH}… {hidden:,} deeper entries")
    return "\n".join(out)
