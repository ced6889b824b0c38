"""Which view fits a text, tried in this order: JSON (the whole text, stripped, is one JSON
object or array), a unified diff, a log or test output, plain text.

Markdown-looking text (three or more ``#`` headings and no diff) is plain text even when it
talks about errors: a document is read by its headings, a log by its flagged lines.
"""

from __future__ import annotations

from typing import Any

from skillstate.outputs.views import diff_view, log_view
from skillstate.support import jsonio

_NOT_JSON = object()


def parse_json(text: str) -> Any:
    """The document when the whole text is a JSON object or array, else ``_NOT_JSON``."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{" or stripped[-1] not in "]}":
        return _NOT_JSON
    try:
        return jsonio.loads(stripped)
    except ValueError:  # jsonio's every refusal, too deep included
        return _NOT_JSON


def is_json(value: Any) -> bool:
    return value is not _NOT_JSON


def line_kind(lines: list[str]) -> str:
    """ "diff", "log" or "text" for the cleaned lines of a text that is not JSON."""
    if diff_view.looks_like_diff(lines):
        return "diff"
    if _headings(lines) >= 3:
        return "text"
    return "log" if log_view.looks_like_log(lines) else "text"


def _headings(lines: list[str]) -> int:
    return sum(1 for line in lines if line.startswith(("# ", "## ", "### ", "#### ")))
