"""The plain text view: the head, the tail, markdown headings, and the lines that bring in
an identifier (a path, a hash, a URL ...) not seen before, then the other lines holding
identifiers, while the budget lasts. Repeated lines are folded and what is left out is
marked, as in every line view.
"""

from __future__ import annotations

from skillstate.outputs.views import identifiers
from skillstate.outputs.views import lines as view_lines

HEAD = 15
TAIL = 10


def view(lines: list[str], budget: int) -> str:
    """The text view of cleaned lines, within ``budget`` characters."""
    entries = view_lines.fold(lines)
    last = len(entries) - 1
    headings = [i for i, entry in enumerate(entries) if _heading(entry.text)]
    fresh, known = _identifier_lines(entries)
    order = [
        *range(5),
        *range(last, last - 3, -1),
        *headings,
        *range(HEAD),
        *range(last, last - TAIL, -1),
        *fresh,
        *known,
    ]
    chosen = view_lines.pick(entries, order, budget)
    return view_lines.write(entries, chosen, len(lines))


def _heading(line: str) -> bool:
    stripped = line.lstrip("#")
    return len(stripped) < len(line) <= len(stripped) + 6 and stripped.startswith(" ")


def _identifier_lines(entries: list[view_lines.Entry]) -> tuple[list[int], list[int]]:
    """Entries bringing in a new identifier, and the other entries holding one. A new line
    reference alone does not make an entry fresh: in search output every line has one, and
    the first line of each file says more than the tenth of the first."""
    seen: set[str] = set()
    fresh: list[int] = []
    known: list[int] = []
    for i, entry in enumerate(entries):
        found = identifiers.find(entry.text)
        new = [ident for ident in found if ident not in seen]
        if any(not identifiers.is_reference(ident) for ident in new):
            fresh.append(i)
        elif found:
            known.append(i)
        seen.update(found)
    return fresh, known
