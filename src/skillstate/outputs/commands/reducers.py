"""The shell lane's reducers: what the model reads instead of a command's whole output.

``reduce(family, text)`` gives the reduced stdout of a command whose family the allowlist
named, or ``None`` to show the output unchanged: when it is small (under ``MIN_CHARS``), when
no reducer fits, or when the reduction is not clearly smaller (over ``SHARE`` of the text).
The exact output is always archived first; a reduction only chooses what to show.

By family:

* ``tests``: pytest keeps its failures and errors sections whole (the tracebacks, ``E`` lines
  and captured output), the short summary and the final counts, and drops the progress lines;
  other runners (cargo, go, npm) lose their passing lines, then the log view trims the rest;
* ``diff`` (git diff, git show): the diff view, files with +/- counts then each hunk trimmed;
* ``git-status``: each section's entries, a long run folded by directory with counts;
* ``git-log``: one line per commit (hash, date, author, subject), a patch as its file counts;
* ``grep`` (grep, rg and linters): the matches grouped by file with counts, a few shown each;
* ``listing`` (ls, ls -R, find): names grouped by directory with counts; ``tree``: the top
  levels, deeper entries counted;
* ``text`` (cat, head, tail): the text view and its identifier sidecar.

Everything is pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from skillstate.outputs.commands import listing
from skillstate.outputs.views import diff_view, log_view, view_of
from skillstate.outputs.views.text import clean, shorten, split_lines

MIN_CHARS = 2000
SHARE = 0.8
BUDGET = 4000
"""Characters a view-based reduction aims at."""
_SHOWN_MATCHES = 3
_LINE = 200

_BANNER = re.compile(r"^=+ (.*?) =+$")
_KEPT_SECTIONS = ("FAILURES", "ERRORS", "short test summary info")
_PROGRESS = re.compile(
    r"^((\S+ )?[.FEsxXp]+|\S+::\S+ (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS))\s*(\[\s*\d+%\])?$"
)
_PASSING = re.compile(
    r"^(test \S.* \.\.\. ok$|=== (RUN|PAUSE|CONT|NAME)\s|\s*--- PASS: |\s*[✓√] |PASS |"
    r"\s+Compiling |ok\s+\S+\s)"
)
_MATCH = re.compile(r"^([^:\s][^:]*):(\d+)[:-](.*)$")
_COMMIT = re.compile(r"^commit ([0-9a-f]{7,64})")


def reduce(family: str, text: str) -> str | None:
    """The reduced output, or ``None`` to show ``text`` as it is (see the module docstring)."""
    reducer = _REDUCERS.get(family)
    if reducer is None or len(text) < MIN_CHARS:
        return None
    reduced = reducer(text)
    if reduced is None or len(reduced) > SHARE * len(text):
        return None
    return reduced


def _lines(text: str) -> list[str]:
    return split_lines(clean(text))


# --- tests ------------------------------------------------------------------------------------


def tests(text: str) -> str | None:
    lines = _lines(text)
    if any(_BANNER.match(line) and "test session starts" in line for line in lines[:5]):
        return pytest(lines)
    kept = [line for line in lines if not _PASSING.match(line)]
    dropped = len(lines) - len(kept)
    body = "\n".join(shorten(line) for line in kept)
    if len(body) > BUDGET:
        body = log_view.view(kept, BUDGET)
    return body + (f"\n… {dropped:,} passing lines left out …" if dropped else "")


def pytest(lines: list[str]) -> str:
    """pytest's failures and errors whole, the short summary, and the counts."""
    out: list[str] = []
    title = ""
    dropped = 0
    for index, line in enumerate(lines):
        banner = _BANNER.match(line)
        if banner:
            title = banner.group(1)
            last = index == len(lines) - 1
            if last or title.startswith(_KEPT_SECTIONS):
                out.append(line)
                continue
        keep = title.startswith(_KEPT_SECTIONS) or _kept_in_frame(line, title)
        if keep and not banner:
            out.append(shorten(line))
        else:
            dropped += 1
    mark = f"… {dropped:,} lines of progress, passes and warnings left out …"
    return "\n".join([mark, *out])


def _kept_in_frame(line: str, title: str) -> bool:
    """Outside the failures: the ``collected`` count, collection errors and a bare summary."""
    if title not in ("", "test session starts"):
        return False
    if _PROGRESS.match(line) or not line.strip():
        return False
    words = line.lower()
    return (
        line.startswith(("collected", "ERROR", "FAILED"))
        or (" failed" in words)
        or (" passed" in words and " in " in words)
    )


# --- diffs, git -------------------------------------------------------------------------------


def diff(text: str) -> str | None:
    lines = _lines(text)
    if not diff_view.looks_like_diff(lines):
        return text_view(text)
    return diff_view.view(lines, BUDGET)


def git_status(text: str) -> str:
    out: list[str] = []
    run: list[str] = []
    for line in _lines(text):
        if line.startswith("\t") or (len(line) > 3 and line[2] == " " and line[:2].strip()):
            run.append(line)
            continue
        out += listing.fold_entries(run)
        run = []
        out.append(line)
    out += listing.fold_entries(run)
    return "\n".join(out)


def git_log(text: str) -> str | None:
    lines = _lines(text)
    starts = [i for i, line in enumerate(lines) if _COMMIT.match(line)]
    if not starts:
        return text_view(text)
    out = [f"{len(starts):,} commits (hash, date, author, subject):"]
    for begin, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        out += _commit(lines[begin:end])
    return "\n".join(out)


def _commit(lines: list[str]) -> list[str]:
    match = _COMMIT.match(lines[0])
    digest = match.group(1)[:12] if match else lines[0]
    author = date = ""
    message: list[str] = []
    patch: list[str] = []
    for line in lines[1:]:
        if patch or line.startswith("diff --git "):
            patch.append(line)
        elif line.startswith("Author: "):
            author = line[8:].split(" <", 1)[0].strip()
        elif line.startswith("Date: "):
            date = line[6:].strip()
        elif line.startswith("    "):
            message.append(line[4:])
    subject = message[0] if message else ""
    more = f" (+{len(message) - 1} lines)" if len(message) > 1 else ""
    out = [shorten(f"{digest} {date} {author}: {subject}{more}")]
    if patch:
        _, files = diff_view.parse(patch)
        out.append("  " + ", ".join(f"{f.name} (+{f.added} -{f.removed})" for f in files))
    return out


# --- grep and linters -------------------------------------------------------------------------


def grep(text: str) -> str | None:
    lines = _lines(text)
    groups: dict[str, list[str]] = {}
    tail: list[str] = []
    for line in lines:
        match = _MATCH.match(line)
        if match:
            groups.setdefault(match.group(1), []).append(f"{match.group(2)}: {match.group(3)}")
            tail = []
        else:
            tail.append(line)
    matched = sum(len(found) for found in groups.values())
    if matched * 2 < len(lines):
        return text_view(text)
    out = [f"{matched:,} matching lines in {len(groups):,} files:"]
    for name, found in groups.items():
        out.append(f"{name} ({len(found):,})")
        out += [f"  {found_line[:_LINE]}" for found_line in found[:_SHOWN_MATCHES]]
        if len(found) > _SHOWN_MATCHES:
            out.append(f"  … {len(found) - _SHOWN_MATCHES:,} more")
    out += [shorten(line) for line in tail[-3:]]
    return "\n".join(out)


# --- listings and text ------------------------------------------------------------------------


def listing_view(text: str) -> str:
    return listing.listing(_lines(text))


def tree(text: str) -> str:
    return listing.tree(_lines(text))


def text_view(text: str) -> str | None:
    view = view_of(text, budget_chars=BUDGET)
    if view is None:
        return None
    sidecar = ["identifiers kept exactly: " + ", ".join(view.identifiers)]
    return "\n".join([view.body, *(sidecar if view.identifiers else [])])


_REDUCERS: dict[str, Callable[[str], str | None]] = {
    "tests": tests,
    "diff": diff,
    "git-status": git_status,
    "git-log": git_log,
    "grep": grep,
    "listing": listing_view,
    "tree": tree,
    "text": text_view,
}
