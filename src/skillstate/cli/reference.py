"""docs/configuration.md, written from the typed settings and the shared flags.

``python -m skillstate.cli.reference [PATH]`` writes the page (``make docs`` runs it before the
site is built); without PATH it prints it. ``config.reference`` renders it; this module only
adds the flags, which are the command line's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from skillstate.cli.options import settings_options
from skillstate.config.reference import render_reference
from skillstate.config.template import default_settings

PAGE = Path("docs") / "configuration.md"


def flags() -> dict[str, str]:
    """Each settings key that has a flag, with the flag as ``--help`` shows it."""

    @click.command()
    @settings_options
    def probe(**_: Any) -> None:
        """Never run: its parameters are the shared flags."""

    found = {}
    for param in probe.params:
        if isinstance(param, click.Option) and param.name and param.name != "config_path":
            found[param.name] = ", ".join(param.opts)
    return found


def configuration_page() -> str:
    """The page's text, from the defaults alone (no file, no environment but HOME)."""
    return render_reference(default_settings({}), flags())


def main(argv: list[str]) -> None:
    page = configuration_page()
    if not argv:
        sys.stdout.write(page)
        return
    path = Path(argv[0])
    if not path.exists() or path.read_text(encoding="utf-8") != page:
        path.write_text(page, encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
