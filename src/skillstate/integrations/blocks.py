"""Marker-delimited blocks in a text file: put ours in, take ours out, find them.

The contract: ``strip(merge(text)) == text`` for any text without our markers that ends with a
newline or is empty (a missing final newline is added before a closing block), and
``merge(merge(text)) == merge(text)``. What lies outside the markers is never touched, so a
user's edits there survive an uninstall.
"""

from __future__ import annotations

from skillstate.integrations.model import Block, BlockEdit

OPEN = ">>> skillstate (managed) >>>"
CLOSE = "<<< skillstate <<<"


def render(edit: BlockEdit, block: Block) -> str:
    """The block as it appears in the file, markers included, ending with a newline."""
    body = block.body if block.body.endswith("\n") else block.body + "\n"
    return f"{edit.comment.format(OPEN)}\n{body}{edit.comment.format(CLOSE)}\n"


def merge(edit: BlockEdit, text: str) -> str:
    """``text`` with our blocks, and only ours, in their places: the top ones first, then the
    user's text, then a blank line and the others."""
    body = strip(edit, text)
    top = "".join(render(edit, block) for block in edit.blocks if block.at_top)
    bottom = "".join(render(edit, block) for block in edit.blocks if not block.at_top)
    if bottom:
        if body and not body.endswith("\n"):
            body += "\n"
        if body:
            body += "\n"
    return top + body + bottom


def strip(edit: BlockEdit, text: str) -> str:
    """``text`` without our blocks (and the blank line that leads a closing block)."""
    out: list[str] = []
    inside = False
    opening, closing = edit.comment.format(OPEN), edit.comment.format(CLOSE)
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if not inside and bare == opening:
            inside = True
            if out and out[-1] in ("\n", "\r\n"):
                out.pop()
        elif inside and bare == closing:
            inside = False
        elif not inside:
            out.append(line)
    return "".join(out)


def found(edit: BlockEdit, text: str) -> list[str]:
    """Our blocks as they stand in ``text``, markers included, in order."""
    blocks: list[str] = []
    current: list[str] | None = None
    opening, closing = edit.comment.format(OPEN), edit.comment.format(CLOSE)
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if current is None and bare == opening:
            current = [line]
        elif current is not None:
            current.append(line)
            if bare == closing:
                blocks.append("".join(current))
                current = None
    return blocks
