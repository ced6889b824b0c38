"""Finding lines in an archived span's text, and reading it a page at a time. Pure.

What the ``recall`` tool answers with: the model gives a ref and a query and gets back the
matching lines with some context, in a form it has seen from grep (``12:`` a matching line,
``11-`` a context line, ``--`` between excerpts), bounded so that one answer never floods the
context it is meant to save.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Room kept for the header and footer lines of a rendered answer.
_FRAME = 320
_MIN_LIMIT = 2 * _FRAME
_QUERY_SHOWN = 80


@dataclass(frozen=True, slots=True)
class Excerpt:
    """Consecutive lines of the text: ``first`` is the 1-based number of ``lines[0]``;
    ``matched`` holds the numbers of the lines that matched. Lines may be clipped."""

    first: int
    lines: tuple[str, ...]
    matched: frozenset[int]


@dataclass(frozen=True, slots=True)
class Found:
    """The answer to a query: every matching line counted, the best ones shown."""

    query: str
    total_lines: int
    matches: int
    excerpts: tuple[Excerpt, ...]

    @property
    def shown(self) -> int:
        return sum(len(e.matched) for e in self.excerpts)

    def render(self) -> str:
        """The text answer, at most the ``limit`` given to ``search`` characters long."""
        query = _clip(self.query, 0, _QUERY_SHOWN)
        if not self.matches:
            return (
                f'No line matches "{query}" ({self.total_lines} lines searched; matching is '
                "case-insensitive, on the whole phrase or on all of its words)."
            )
        width = len(str(self.total_lines))
        out = [f'{self.shown} of {self.matches} matching lines for "{query}":']
        for index, excerpt in enumerate(self.excerpts):
            if index:
                out.append("--")
            out.extend(_numbered(excerpt, width))
        if self.shown < self.matches:
            out.append(
                f"[{self.matches - self.shown} more matching lines not shown: use a narrower query]"
            )
        return "\n".join(out)


def search(
    text: str, query: str, *, context: int = 2, limit: int = 4000, width: int = 300
) -> Found:
    """The lines of ``text`` that match ``query``, each with ``context`` lines either side.

    A line matches when it contains the query (case-insensitive) or all of the query's
    whitespace-separated words in any order; lines holding the whole phrase are shown first
    when not all fit. Overlapping and adjacent windows merge into one excerpt. Lines longer
    than ``width`` are clipped around the match. The rendered answer stays within ``limit``
    characters; at least one matching line is always shown. An empty query is a ValueError.
    """
    words = query.casefold().split()
    if not words:
        raise ValueError("empty query")
    if limit < _MIN_LIMIT or width < 1 or context < 0:
        raise ValueError(f"limit must be at least {_MIN_LIMIT}, width positive, context >= 0")
    lines = text.splitlines()
    phrase = query.strip().casefold()
    exact, loose = _matching(lines, phrase, words)
    order = exact + loose
    tag_width = len(str(len(lines))) + 2
    width = min(width, limit - _FRAME - tag_width - 3)
    clipped: dict[int, str] = {}

    def cost(index: int) -> int:
        if index not in clipped:
            clipped[index] = _clip(lines[index], _anchor(lines[index], phrase, words), width)
        return tag_width + len(clipped[index]) + 1

    covered: set[int] = set()
    shown: set[int] = set()
    used, budget = 0, limit - _FRAME
    for hit in order:
        window = range(max(0, hit - context), min(len(lines), hit + context + 1))
        new = [i for i in window if i not in covered]
        extra = sum(cost(i) for i in new) + 3  # 3: a "--" separator line, at most one per hit
        if used + extra > budget:
            if not shown:  # the single best line, alone, rather than nothing
                covered.add(hit)
                shown.add(hit)
            break
        covered.update(new)
        shown.add(hit)
        used += extra
    for i in covered:
        cost(i)
    matched = shown | (covered & set(order))
    return Found(query, len(lines), len(order), _excerpts(sorted(covered), matched, clipped))


def page(text: str, offset: int = 0, limit: int = 16000) -> str:
    """``text`` from character ``offset``, at most ``limit`` characters of it (cut after a line
    break where one falls in the page's last quarter), with a note saying how to read on."""
    if offset < 0 or limit < 1:
        raise ValueError("offset must be >= 0 and limit positive")
    total = len(text)
    if offset >= total and (offset or total):
        return f"[offset {offset} is past the end: the text has {total} characters]"
    end = min(total, offset + limit)
    if end < total:
        cut = text.rfind("\n", offset + (3 * limit) // 4, end)
        end = cut + 1 if cut >= 0 else end
    body = text[offset:end]
    if offset == 0 and end == total:
        return body
    note = f"[characters {offset}-{end} of {total}"
    note += f"; read on with offset={end}]" if end < total else "]"
    return body + ("" if body.endswith("\n") else "\n") + note


def _matching(lines: list[str], phrase: str, words: list[str]) -> tuple[list[int], list[int]]:
    exact: list[int] = []
    loose: list[int] = []
    for index, line in enumerate(lines):
        folded = line.casefold()
        if phrase in folded:
            exact.append(index)
        elif all(word in folded for word in words):
            loose.append(index)
    return exact, loose


def _anchor(line: str, phrase: str, words: list[str]) -> int | None:
    """Where in ``line`` the match starts (approximately, as case folding may change lengths),
    or None for a context line."""
    folded = line.casefold()
    for needle in (phrase, *words):
        at = folded.find(needle)
        if at >= 0:
            return min(at, len(line))
    return None


def _clip(line: str, anchor: int | None, width: int) -> str:
    if len(line) <= width:
        return line
    if anchor is None:
        return line[:width] + "…"
    start = max(0, min(anchor - width // 2, len(line) - width))
    head = "…" if start > 0 else ""
    tail = "…" if start + width < len(line) else ""
    return head + line[start : start + width] + tail


def _excerpts(covered: list[int], shown: set[int], clipped: dict[int, str]) -> tuple[Excerpt, ...]:
    runs: list[list[int]] = []
    for index in covered:
        if runs and runs[-1][-1] == index - 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return tuple(
        Excerpt(
            run[0] + 1,
            tuple(clipped[i] for i in run),
            frozenset(i + 1 for i in run if i in shown),
        )
        for run in runs
    )


def _numbered(excerpt: Excerpt, width: int) -> list[str]:
    return [
        f"{number:>{width}}{':' if number in excerpt.matched else '-'} {line}"
        for number, line in enumerate(excerpt.lines, start=excerpt.first)
    ]
