"""Text as a view reads it: ANSI colour codes gone, CRLF and lone CR read as LF, other
control characters shown as U+FFFD, and long lines shortened with the cut marked.

Only the view is cleaned; the archive keeps the original bytes.
"""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves) and OSC sequences (titles, links): each class is a
# single character set, so the match is linear.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
_CONTROLS = {c: "\ufffd" for c in (*range(9), *range(11, 32), 127)}

LINE_HEAD = 240
"""Characters kept from the start of a long line."""
LINE_TAIL = 80
"""Characters kept from the end of a long line."""


def clean(text: str) -> str:
    """``text`` with colour codes stripped, line ends made LF and controls made visible."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.translate(_CONTROLS)


def split_lines(text: str) -> list[str]:
    """The lines of cleaned text; a final line end does not start another line."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def count_lines(text: str) -> int:
    """Lines in the original as the view reads them: LF, CRLF and a lone CR each end one."""
    if not text:
        return 0
    ends = text.count("\n") + text.count("\r") - text.count("\r\n")
    return ends + (0 if text.endswith(("\n", "\r")) else 1)


def shorten(line: str) -> str:
    """``line``, or its head and tail with the number of characters cut between them."""
    if len(line) <= LINE_HEAD + LINE_TAIL + 40:
        return line
    cut = len(line) - LINE_HEAD - LINE_TAIL
    return f"{line[:LINE_HEAD]} … {cut:,} chars … {line[-LINE_TAIL:]}"


def words(text: str) -> frozenset[str]:
    """The space-separated words of a literal: word lists read better as words."""
    return frozenset(text.split())
