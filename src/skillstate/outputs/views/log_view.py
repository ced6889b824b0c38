"""The log and test-output view.

It keeps, in priority order while the budget lasts: the last lines (a test run's summary is
there), the first lines, every error line and two lines around each, more of the head (~15
lines) and the tail (~20), then the warning lines and two lines around each. An error line
holds one of the words error, failure, exception, traceback, FAILED, panic, fatal (any case,
as a word, or ending a capitalised one: ``KeyError``), or a test runner's marker: pytest's ``E   ``
lines, ``>   `` source pointers and ``___ test ___`` headers; jest's ``●``, ``> 4 |``
pointers, ``Expected:`` and ``Received:``.
Runs of repeated lines are folded (``lines.fold``) and what is left out is marked.
"""

from __future__ import annotations

import re

from skillstate.outputs.views import lines as view_lines
from skillstate.outputs.views.text import words

HEAD = 15
TAIL = 20
CONTEXT = 2

_WORD = re.compile(r"[A-Za-z]+")
_ERROR_WORDS = words(
    "error errors err failure failures failed fail failing exception exceptions traceback "
    "panic panicked fatal critical"
)
_WARNING_WORDS = words("warning warnings warn")
_WORD_ENDS = ("Error", "Exception")  # KeyError, NullPointerException; not "terror"
_MARKERS = ("●", "✕")
_STARTS = ("E   ", "Expected:", "Received:", ">   ", "FAIL ")
_LOG_HINTS = ("at ", 'File "', "Traceback", "PASS ", "FAIL ", "INFO", "DEBUG", "WARN", "[")

WARNING = 1
ERROR = 2


def severity(line: str) -> int:
    """``ERROR`` for a line a reader looks for first (errors, failures, test runner markers),
    ``WARNING`` for a warning, else 0."""
    if line.startswith(("E   ", "FAIL ")) or any(m in line for m in _MARKERS):
        return ERROR
    stripped = line.lstrip()
    if stripped.startswith(_STARTS) or _pointer(stripped) or _section(stripped):
        return ERROR
    found = 0
    for word in _WORD.findall(line):
        lower = word.lower()
        if lower in _ERROR_WORDS or word.endswith(_WORD_ENDS):
            return ERROR
        if lower in _WARNING_WORDS:
            found = WARNING
    return found


def _pointer(stripped: str) -> bool:
    """jest's source pointer: ``> 4 |   expect(sum(1, 2)).toBe(3);``."""
    number, bar, _ = stripped[1:].partition("|")
    return stripped.startswith(">") and bool(bar) and number.strip().isdigit()


def _section(stripped: str) -> bool:
    """pytest's ``____ test_name ____`` header of one failure."""
    return stripped.startswith("___") and stripped.endswith("___") and " " in stripped


def flagged(line: str) -> bool:
    """Whether a log line is an error or a warning."""
    return severity(line) > 0


def looks_like_log(lines: list[str]) -> bool:
    """Many lines, a few flagged or most shaped like log records (levels, stack frames,
    timestamps)."""
    if len(lines) < 10:
        return False
    sample = lines if len(lines) <= 4000 else lines[:2000] + lines[-2000:]
    flags = sum(1 for line in sample if flagged(line))
    hinted = sum(1 for line in sample if _log_shaped(line))
    return flags >= 3 or hinted * 3 >= len(sample)


def _log_shaped(line: str) -> bool:
    stripped = line.lstrip()
    return stripped.startswith(_LOG_HINTS) or (line[:4].isdigit() and line[4:5] in "-/:")


def view(lines: list[str], budget: int) -> str:
    """The log view of cleaned lines, within ``budget`` characters."""
    entries = view_lines.fold(lines)
    ranks = [severity(entry.text) for entry in entries]
    errors = [i for i, rank in enumerate(ranks) if rank == ERROR]
    warnings = [i for i, rank in enumerate(ranks) if rank == WARNING]
    last = len(entries) - 1
    # errors and where they happened first, then the frame of the run, then the warnings
    order = [
        *range(last, last - 3, -1),
        *range(5),
        *errors,
        *view_lines.around(errors, CONTEXT),
        *range(HEAD),
        *range(last, last - TAIL, -1),
        *warnings,
        *view_lines.around(warnings, CONTEXT),
    ]
    chosen = view_lines.pick(entries, order, budget)
    return view_lines.write(entries, chosen, len(lines))
