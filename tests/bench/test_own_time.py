"""``python -m skillstate.bench.own_time`` measures every arm from the gateway's own header."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_it_prints_each_arms_own_time() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "skillstate.bench.own_time", "--requests", "20", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = [line.split() for line in done.stdout.splitlines()[1:]]
    assert [row[0] for row in rows] == ["off", "off-stream", "hybrid"]
    assert all(re.fullmatch(r"\d+", row[2]) and int(row[2]) > 0 for row in rows)
