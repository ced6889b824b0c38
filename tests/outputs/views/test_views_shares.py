"""Each corpus output's view body is at most this share of the original's characters."""

from __future__ import annotations

import pytest
from views_corpus import read

from skillstate.outputs.views import view_of

MAX_SHARE = {
    "ansi_build.log": 0.20,
    "api_records.json": 0.02,
    "binaryish.txt": 0.10,
    "cargo_build.log": 0.20,
    "changes.diff": 0.15,
    "crlf_build.log": 0.10,
    "grep_search.txt": 0.20,
    "guide.md": 0.25,
    "identical_lines.log": 0.001,
    "jest_failure.txt": 0.05,
    "nested_config.json": 0.05,
    "pytest_failure.txt": 0.10,
    "single_line.txt": 0.005,
}


@pytest.mark.parametrize("name", sorted(MAX_SHARE))
def test_share(name: str) -> None:
    text = read(name)
    made = view_of(text)
    assert made is not None
    assert len(made.body) / len(text) <= MAX_SHARE[name]
