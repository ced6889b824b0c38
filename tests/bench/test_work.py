"""``python -m skillstate.bench.work`` counts the Python work per request of each arm, the
same from one run to the next."""

from __future__ import annotations

import collections
import re
import subprocess
import sys

import pytest

from skillstate.bench.work import Counts, counting


def test_the_counter_counts_each_functions_opcodes() -> None:
    def loop(n: int) -> int:
        total = 0
        for i in range(n):
            total += i
        return total

    counts: Counts = collections.Counter()
    sys.settrace(counting(counts))
    try:
        loop(1)
        once = counts[loop.__code__]
        loop(11)
    finally:
        sys.settrace(None)
    assert once > 0
    assert counts[loop.__code__] - once > once  # ten more turns of the loop, more opcodes


def _figures(*args: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "skillstate.bench.work", "--requests", "20", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    found = re.findall(r"^  (direct|forwarder|gateway) +(\d+)", done.stdout, re.MULTILINE)
    return {arm: float(count) for arm, count in found}


@pytest.mark.slow
def test_each_arm_is_counted_and_the_count_holds_from_run_to_run() -> None:
    first, second = _figures(), _figures()
    assert set(first) == {"direct", "forwarder", "gateway"}
    assert all(count > 0 for count in first.values())
    assert first["gateway"] > first["forwarder"]  # it does more than forward bytes
    for arm, count in first.items():
        assert abs(second[arm] - count) <= 0.01 * count, (arm, count, second[arm])


@pytest.mark.slow
def test_a_stream_in_hybrid_with_tools_is_counted_and_names_the_costliest() -> None:
    command = [sys.executable, "-m", "skillstate.bench.work", "--requests", "10", "--stream"]
    done = subprocess.run(
        [*command, "--mode", "hybrid", "--tools", "--top", "5"],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    assert "stream, tools, mode hybrid" in done.stdout
    listed = done.stdout.split("costliest functions", 1)[1].strip().splitlines()[1:]
    assert len(listed) == 5 and all(re.match(r"\s+[\d.]+\s+\S", line) for line in listed)
