"""Line views, shared by the log and the plain text view: fold runs, pick lines by priority
within a budget, and mark what was left out.

A run of three or more lines that are equal, or equal once each run of digits is masked
(counters, timestamps, ids), becomes one entry: its first line and ``(… repeated N times)``
(``, digits varying`` when they were not all equal). Picked entries are written in their
original order; every stretch left out becomes one ``… N lines …`` line, so a reader always
knows where and how much was cut.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from skillstate.outputs.views.text import shorten

_FOLD_RUN = 3  # shorter runs read better as they are
_MARK_COST = 24  # an upper bound on the length of one "… N lines …" line
_DIGITS = re.compile(r"[0-9]+")  # one class, so linear


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the view, standing for ``count`` lines of the original from ``start``."""

    start: int
    count: int
    text: str


def fold(lines: list[str]) -> list[Entry]:
    """The lines as entries, runs of (near-)identical lines folded into one."""
    entries: list[Entry] = []
    i = 0
    while i < len(lines):
        key = _mask(lines[i])
        j = i + 1
        while j < len(lines) and _mask(lines[j]) == key:
            j += 1
        entries.extend(_run(lines, i, j))
        i = j
    return entries


def _mask(line: str) -> str:
    """The line with each run of digits as one ``#``: ``tick 9`` and ``tick 10`` are alike."""
    return _DIGITS.sub("#", line) if line else line


def _run(lines: list[str], i: int, j: int) -> list[Entry]:
    if j - i < _FOLD_RUN:
        return [Entry(k, 1, shorten(lines[k])) for k in range(i, j)]
    exact = all(lines[k] == lines[i] for k in range(i + 1, j))
    note = "" if exact else ", digits varying"
    return [Entry(i, j - i, f"{shorten(lines[i])} (… repeated {j - i:,} times{note})")]


def pick(entries: list[Entry], priorities: Iterable[int], budget: int) -> list[int]:
    """Entry indices taken in priority order while the written view stays within ``budget``.

    Each entry costs its line; the cut marks are counted exactly (an entry with neither
    neighbour picked adds a mark, one with both removes one), each at its longest."""
    chosen: set[int] = set()
    used = _MARK_COST  # the one mark of an empty view
    for index in priorities:
        if index in chosen or not 0 <= index < len(entries):
            continue
        left = index == 0 or index - 1 in chosen
        right = index == len(entries) - 1 or index + 1 in chosen
        marks = 0 if left != right else (-1 if left else 1)
        cost = len(entries[index].text) + 1 + marks * _MARK_COST
        if used + cost > budget:
            continue  # a shorter entry later in the order may still fit
        used += cost
        chosen.add(index)
    return sorted(chosen)


def write(entries: list[Entry], chosen: list[int], total_lines: int) -> str:
    """The picked entries in order, with each stretch left out marked by its line count."""
    out: list[str] = []
    line = 0  # the next original line not yet accounted for
    for index in chosen:
        entry = entries[index]
        if entry.start > line:
            out.append(_mark(entry.start - line))
        out.append(entry.text)
        line = entry.start + entry.count
    if total_lines > line:
        out.append(_mark(total_lines - line))
    return "\n".join(out)


def _mark(lines: int) -> str:
    return f"… {lines:,} line{'s' if lines != 1 else ''} …"


def around(indices: Iterable[int], width: int) -> list[int]:
    """The entries within ``width`` of each index, nearest first, in the indices' order."""
    out: list[int] = []
    for index in indices:
        for step in range(1, width + 1):
            out.extend((index - step, index + step))
    return out
