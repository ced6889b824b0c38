"""The view record and the text the model sees in its place.

``render`` writes one header line, then the body, then the identifier sidecar:

    [skillstate view of a log: 48,213 chars, 1,204 lines; the exact output is archived as
    REF: recall it with ref REF, or with a query for matching lines]
    <body>
    identifiers kept exactly: a/b.py, 3f2a9c1, ...

(the header is one line; it is wrapped here only). The header names the archive ref twice so
that a model that reads only the first line still knows how to get the exact output back.
Everything here is deterministic: the same view and ref always render to the same bytes, so a
provider's prefix cache keeps hitting on a history that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass

_KIND_NAMES = {"json": "a JSON document", "diff": "a diff", "log": "a log", "text": "a text"}


@dataclass(frozen=True, slots=True)
class View:
    """A compact stand-in for one bulky tool output.

    ``identifiers`` is the sidecar: exact identifiers of the original (paths, hashes, ids,
    error codes ...) that ``body`` does not hold, in order of first appearance."""

    kind: str
    body: str
    identifiers: tuple[str, ...]
    original_chars: int
    original_lines: int


def render(view: View, ref: str) -> str:
    """The header line, the body and the sidecar block, as the model sees them."""
    kind = _KIND_NAMES.get(view.kind, f"a {view.kind}")
    header = (
        f"[skillstate view of {kind}: {view.original_chars:,} chars, "
        f"{view.original_lines:,} line{'' if view.original_lines == 1 else 's'}; "
        f"the exact output is archived as {ref}: "
        f"recall it with ref {ref}, or with a query for matching lines]"
    )
    parts = [header, view.body]
    if view.identifiers:
        parts.append("identifiers kept exactly: " + ", ".join(view.identifiers))
    return "\n".join(parts)


def clip(body: str, budget: int) -> str:
    """``body`` cut at a line end so that it, with the mark of the cut, fits ``budget``.

    The view builders stay within budget on their own; this is the guarantee behind them."""
    if len(body) <= budget:
        return body
    mark = f"… view cut at {budget:,} chars …"
    room = max(0, budget - len(mark) - 1)
    end = body.rfind("\n", 0, room + 1)
    kept = body[: end if end > 0 else room]
    return f"{kept}\n{mark}" if kept else mark[:budget]
