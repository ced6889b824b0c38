"""Prints, for each output in a corpus folder, its view's kind and size against the original's,
in characters and in tokens: ``python -m skillstate.outputs.views.measure [FOLDER]`` (by default
``tests/fixtures/outputs``). The view's size is what the model reads: ``render``'s text.
"""

from __future__ import annotations

import sys
from pathlib import Path

from skillstate.outputs.views import render, view_of

DEFAULT_FOLDER = Path("tests/fixtures/outputs")


_HEADER = ("output", "kind", "chars", "body", "shown", "share", "tokens", "shown")
_FORMAT = "{:<22} {:<6} {:>9} {:>7} {:>7} {:>6} {:>8} {:>6}"


def rows(folder: Path) -> list[tuple[str, str, int, int, int, int, int]]:
    """Per output: name, kind, original chars, body chars, shown chars (``render``'s text, the
    sidecar included), original tokens, shown tokens. An output without a view is shown whole."""
    from skillstate.economics.tokenizer import count_tokens  # the views themselves count none

    out = []
    for path in sorted(folder.iterdir()):
        if path.suffix == ".py" or path.name.startswith(".") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        view = view_of(text)
        shown = render(view, "ar_0123456789ab") if view else text
        kind, body = (view.kind, len(view.body)) if view else ("(none)", len(text))
        row = (
            path.name,
            kind,
            len(text),
            body,
            len(shown),
            count_tokens(text),
            count_tokens(shown),
        )
        out.append(row)
    return out


def main(argv: list[str]) -> None:
    folder = Path(argv[0]) if argv else DEFAULT_FOLDER
    print(_FORMAT.format(*_HEADER))
    for name, kind, chars, body, shown, tokens, shown_tokens in rows(folder):
        share = f"{shown / chars:.1%}" if chars else "-"
        numbers = (f"{n:,}" for n in (chars, body, shown))
        print(_FORMAT.format(name, kind, *numbers, share, f"{tokens:,}", f"{shown_tokens:,}"))


if __name__ == "__main__":
    main(sys.argv[1:])
