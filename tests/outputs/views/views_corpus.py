"""The tool-output corpus of tests/fixtures/outputs, read as the gateway would see it."""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).parents[2] / "fixtures" / "outputs"


def read(name: str) -> str:
    """One output, exactly as written (CRLF kept)."""
    return (FOLDER / name).read_text(encoding="utf-8", errors="strict")


def names() -> list[str]:
    return sorted(
        p.name for p in FOLDER.iterdir() if p.suffix != ".py" and not p.name.startswith(".")
    )
