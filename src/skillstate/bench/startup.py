"""How fast the command line starts: the median wall time of ``skillstate --help`` and
``skillstate --version``, each a new process, against ``python -c "import click, rich"``, the
floor (the two libraries the command line is built on, in the same interpreter). The target
(issue 26): at most 4x the floor, which holds while those two import neither the settings
(pydantic) nor the gateway (aiohttp) nor any command (``cli.main.COMMANDS``).

The arms alternate within each round, so that a change in the machine's load hits them alike.
``skillstate`` is the console script beside this interpreter where there is one (what a user
runs), else ``python -m skillstate``. Run: ``skillstate bench startup [--rounds N]``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TARGET = 4.0
"""The most ``--help`` and ``--version`` may take, as a multiple of the floor."""


@dataclass(frozen=True, slots=True)
class Arm:
    name: str
    argv: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Timing:
    """One arm's wall times, in seconds, one per round."""

    arm: Arm
    seconds: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def program(python: str = sys.executable) -> tuple[str, ...]:
    """How ``skillstate`` is run: the console script beside ``python``, else ``-m``."""
    script = Path(python).parent / "skillstate"
    if script.is_file() and os.access(script, os.X_OK):
        return (str(script),)
    return (python, "-m", "skillstate")


def arms(python: str = sys.executable) -> list[Arm]:
    """The floor first, then ``--help`` and ``--version``."""
    command = program(python)
    return [
        Arm("python -c 'import click, rich'", (python, "-c", "import click, rich")),
        Arm("skillstate --help", (*command, "--help")),
        Arm("skillstate --version", (*command, "--version")),
    ]


def measure(chosen: Sequence[Arm], rounds: int) -> list[Timing]:
    """Each arm once to warm the file cache, then ``rounds`` rounds of every arm in turn."""
    for arm in chosen:
        _wall(arm)
    seconds: dict[str, list[float]] = {arm.name: [] for arm in chosen}
    for _ in range(rounds):
        for arm in chosen:
            seconds[arm.name].append(_wall(arm))
    return [Timing(arm, tuple(seconds[arm.name])) for arm in chosen]


def _wall(arm: Arm) -> float:
    began = time.perf_counter()
    subprocess.run(arm.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - began


def format_report(timings: Sequence[Timing]) -> str:
    """A line per arm: its median in ms and its ratio to the floor (the first), against the
    target."""
    floor = timings[0].median
    width = max(len(t.arm.name) for t in timings)
    lines = [f"{'command':<{width}}  median ms  x floor  (target: at most {TARGET:g}x)"]
    for timing in timings:
        ratio = timing.median / floor
        verdict = "" if timing is timings[0] else ("  ok" if ratio <= TARGET else "  OVER")
        lines.append(
            f"{timing.arm.name:<{width}}  {timing.median * 1000:9.1f}  {ratio:6.2f}x{verdict}"
        )
    runs = len(timings[0].seconds)
    lines.append(f"median of {runs} runs each, each a new process")
    return "\n".join(lines)
