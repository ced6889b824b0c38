"""The same text gives the same view, byte for byte, in any process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from views_corpus import FOLDER, names, read

from skillstate.outputs.views import render, view_of

_SCRIPT = """
import hashlib, pathlib, sys
from skillstate.outputs.views import render, view_of
out = []
for name in sys.argv[1:]:
    view = view_of((pathlib.Path({folder!r}) / name).read_text(encoding="utf-8"))
    out.append(render(view, "ar_1") if view else "-")
print(hashlib.sha256("\\x00".join(out).encode("utf-8", "surrogatepass")).hexdigest())
"""


@pytest.mark.parametrize("name", names())
def test_same_text_same_view(name: str) -> None:
    text = read(name)
    assert view_of(text) == view_of(text)
    first, second = view_of(text), view_of(str(text))
    assert first is not None and second is not None
    assert render(first, "ar_1") == render(second, "ar_1")


def test_same_view_under_different_hash_seeds() -> None:
    chosen = ["api_records.json", "grep_search.txt", "pytest_failure.txt", "changes.diff"]
    src = str(Path(__file__).parents[3] / "src")
    digests = set()
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": src}
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT.format(folder=str(FOLDER)), *chosen],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        digests.add(done.stdout.strip())
    assert len(digests) == 1
