"""Prints, for each shell fixture, its stdout's size before and after the lane, in characters
and in tokens, and the total saving: ``python -m skillstate.integrations.shell.measure
[FOLDER]`` (by default ``tests/fixtures/shell/outputs``, made by
``tests/fixtures/shell/make_fixtures.py``).

"After" is what the model reads: the header line and the reduction, or the output unchanged
when the lane does not reduce it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from skillstate.integrations.shell.run import shown
from skillstate.outputs.commands.reducers import reduce

DEFAULT_FOLDER = Path("tests/fixtures/shell/outputs")
_REF = "ar_000000000000000000000000"
_FORMAT = "{:<16} {:<10} {:>5} {:>9} {:>8} {:>8} {:>7} {:>7}"
_HEADER = ("fixture", "family", "exit", "chars", "after", "tokens", "after", "saved")


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    family: str
    exit_code: int
    chars: int
    after_chars: int
    tokens: int
    after_tokens: int


def rows(folder: Path) -> list[Row]:
    """One row per fixture in ``folder``'s ``index.json``, in name order."""
    from skillstate.economics.tokenizer import count_tokens  # the reducers count none

    index = json.loads((folder / "index.json").read_text())
    out = []
    for name in sorted(index):
        entry = index[name]
        text = (folder / f"{name}.stdout").read_bytes().decode("utf-8", "replace")
        reduced = reduce(entry["family"], text)
        after = text if reduced is None else shown(reduced, _REF, len(text)).decode()
        sizes = (len(text), len(after), count_tokens(text), count_tokens(after))
        out.append(Row(name, entry["family"], entry["exit_code"], *sizes))
    return out


def _saved(before: int, after: int) -> str:
    return f"{1 - after / before:.0%}" if before else "-"


def main(argv: list[str]) -> None:
    folder = Path(argv[0]) if argv else DEFAULT_FOLDER
    table = rows(folder)
    print(_FORMAT.format(*_HEADER))
    for row in table:
        numbers = (row.chars, row.after_chars, row.tokens, row.after_tokens)
        saved = _saved(row.tokens, row.after_tokens)
        figures = (f"{number:,}" for number in numbers)
        print(_FORMAT.format(row.name, row.family, row.exit_code, *figures, saved))
    tokens = sum(row.tokens for row in table)
    after = sum(row.after_tokens for row in table)
    chars = sum(row.chars for row in table)
    after_chars = sum(row.after_chars for row in table)
    print(
        f"total: {chars:,} -> {after_chars:,} chars, {tokens:,} -> {after:,} tokens "
        f"({_saved(tokens, after)} saved)"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
