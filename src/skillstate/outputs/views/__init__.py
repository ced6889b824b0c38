"""Views of bulky tool outputs: a compact stand-in plus an identifier sidecar.

``view_of(text)`` turns one tool output into a ``View`` (or ``None`` when a view would not pay:
text shorter than twice the budget, or a view not clearly smaller than it), and
``render(view, ref)`` writes what the model sees instead of the output: one header line naming
the kind, the original's size and the archive ref to recall it by, the body, then the
identifiers the body lacks.

What a view keeps, by kind (each module's docstring has the detail):

* ``json``: anomalies (objects reporting errors, 4xx/5xx statuses, non-zero codes) with their
  values, and a shape tree of keys, types, array lengths and first and last items;
* ``diff``: the files with +/- counts, each hunk header and its first changed lines;
* ``log``: head, tail, every flagged line (error, warning, failure, traceback, test runner
  markers) with two lines around it, repeated lines folded;
* ``text``: head, tail, headings and lines bringing in identifiers.

What it drops is marked where it was (``… N lines …``, ``… N more changed lines …``), and
the identifiers it dropped (paths, URLs, hashes, ids, error codes, versions) are listed
exactly in the sidecar. ANSI colour codes are stripped and CRLF read as LF in the view only.

Everything is pure and deterministic: the same text gives the same view, byte for byte (a
provider's prefix cache depends on it), in time linear in the text.
"""

from __future__ import annotations

from skillstate.outputs.views import detect, diff_view, identifiers, json_view, log_view, text_view
from skillstate.outputs.views.text import clean, count_lines, split_lines
from skillstate.outputs.views.view import View, clip, render

__all__ = ["MIN_BUDGET", "View", "render", "view_of"]

MIN_BUDGET = 400
"""A smaller ``budget_chars`` is read as this: below it no view says anything useful."""
_WORTH = 2  # a view is made only of a text at least this many budgets long
_SHARE = 0.5  # ... and kept only when its body and sidecar are at most this share of it


def view_of(text: str, *, budget_chars: int = 6000) -> View | None:
    """The view of one tool output, or ``None`` when it is not worth one.

    The body is at most ``max(budget_chars, MIN_BUDGET)`` characters."""
    budget = max(budget_chars, MIN_BUDGET)
    if len(text) < _WORTH * budget:
        return None
    kind, body = _body(text, budget)
    body = clip(body, budget)
    sidecar = identifiers.sidecar(identifiers.find(text), body)
    shown = len(body) + sum(len(ident) + 2 for ident in sidecar)
    if shown > _SHARE * len(text):
        return None
    return View(kind, body, sidecar, len(text), count_lines(text))


def _body(text: str, budget: int) -> tuple[str, str]:
    value = detect.parse_json(text)
    if detect.is_json(value):
        return "json", json_view.view(value, budget)
    lines = split_lines(clean(text))
    kind = detect.line_kind(lines)
    if kind == "diff":
        return kind, diff_view.view(lines, budget)
    if kind == "log":
        return kind, log_view.view(lines, budget)
    return kind, text_view.view(lines, budget)
