"""The unified diff view: the files with their added and removed line counts, then each
file's header, its notes (new, deleted, renamed, binary) and each hunk's ``@@`` header with
its first few changed lines; what a hunk holds beyond them is counted, not shown. When the
budget is short, fewer changed lines are shown per hunk, then none, then hunks are counted
per file instead of listed.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from skillstate.outputs.views.text import shorten

_HUNK = re.compile(r"@@ -[0-9]+(?:,([0-9]+))? \+[0-9]+(?:,([0-9]+))? @@")
_NOTES = ("new file", "deleted file", "rename ", "similarity", "Binary files", "old mode")
_SHOWN = (8, 4, 2, 0)  # changed lines shown per hunk, tried in turn


@dataclass(slots=True)
class _Hunk:
    header: str
    changed: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _File:
    header: str
    name: str
    notes: list[str] = field(default_factory=list)
    hunks: list[_Hunk] = field(default_factory=list)
    added: int = 0
    removed: int = 0


def looks_like_diff(lines: list[str]) -> bool:
    """A ``diff --git`` line, or a ``---``/``+++`` pair, with an ``@@`` hunk header."""
    has_hunk = any(_HUNK.match(line) for line in lines)
    if not has_hunk:
        return False
    if any(line.startswith("diff --git ") for line in lines):
        return True
    pairs = itertools.pairwise(lines)
    return any(a.startswith("--- ") and b.startswith("+++ ") for a, b in pairs)


def parse(lines: list[str]) -> tuple[list[str], list[_File]]:
    """The lines before the first file (a commit header, say), and the files."""
    preamble: list[str] = []
    files: list[_File] = []
    old_left = new_left = 0  # lines still to come in the current hunk, by its header
    for i, line in enumerate(lines):
        if old_left > 0 or new_left > 0:
            old_left, new_left = _hunk_line(files[-1], line, old_left, new_left)
        elif line.startswith("diff --git "):
            files.append(_File(line, line.rsplit(" b/", 1)[-1]))
        elif line.startswith("--- ") and lines[i + 1 : i + 2] and lines[i + 1].startswith("+++ "):
            if not files or files[-1].hunks:
                files.append(_File(line, _name(lines[i + 1])))
        elif line.startswith("+++ ") and files:
            files[-1].name = _name(line) if _name(line) != "/dev/null" else files[-1].name
        elif (match := _HUNK.match(line)) and files:
            files[-1].hunks.append(_Hunk(shorten(line)))
            old_left = int(match.group(1) or 1)
            new_left = int(match.group(2) or 1)
        elif files and line.startswith(_NOTES):
            files[-1].notes.append(shorten(line))
        elif not files:
            preamble.append(line)
    return preamble, files


def _name(line: str) -> str:
    name = line[4:].split("\t", 1)[0]
    return name[2:] if name.startswith(("a/", "b/")) else name


def _hunk_line(file: _File, line: str, old_left: int, new_left: int) -> tuple[int, int]:
    """Count one line of a hunk; the hunk header said how many of each kind to expect."""
    if line.startswith("+"):
        file.added += 1
        file.hunks[-1].changed.append(shorten(line))
        return old_left, new_left - 1
    if line.startswith("-"):
        file.removed += 1
        file.hunks[-1].changed.append(shorten(line))
        return old_left - 1, new_left
    if line.startswith("\\"):  # "\ No newline at end of file"
        return old_left, new_left
    return old_left - 1, new_left - 1


def view(lines: list[str], budget: int) -> str:
    """The diff view, the most detailed that fits ``budget``."""
    preamble, files = parse(lines)
    body = ""
    for shown in _SHOWN:
        body = _write(preamble, files, shown, hunks=True)
        if len(body) <= budget:
            return body
    return _write(preamble, files, 0, hunks=False)


def _write(preamble: list[str], files: list[_File], shown: int, *, hunks: bool) -> str:
    added = sum(f.added for f in files)
    removed = sum(f.removed for f in files)
    out = [shorten(line) for line in preamble[:10]]
    if len(preamble) > 10:
        out.append(f"… {len(preamble) - 10:,} lines …")
    out.append(f"{len(files):,} files changed, +{added:,} -{removed:,}:")
    out += [f"  {f.name} (+{f.added:,} -{f.removed:,})" for f in files]
    for f in files:
        out += [f.header, *f.notes]
        if not hunks:
            out.append(f"  ({len(f.hunks):,} hunks)")
            continue
        for hunk in f.hunks:
            out.append(hunk.header)
            out += hunk.changed[:shown]
            if len(hunk.changed) > shown:
                out.append(f"  … {len(hunk.changed) - shown:,} more changed lines …")
    return "\n".join(out)
