"""How fast the command line starts: the median wall time of each command, a new process each
run, against a floor measured in the same run (issues 26 and 28):

* ``skillstate --help`` and ``--version`` against ``python -c "import click, rich"`` (the two
  libraries the command line is built on): at most 4x, which holds while they import neither
  the settings (pydantic) nor the gateway (aiohttp) nor any command (``cli.group.COMMANDS``);
* ``skillstate hook claude``, answering a typical PreToolUse event (a ``git status`` Bash call,
  read on stdin, in a small git project), against ``python -c "import json"`` (a bare
  interpreter start): at most 5x, which holds while the hook imports none of the gateway
  (``cli.fast``);
* ``skillstate shell -- ls`` against ``ls`` in the same project: at most 0.1 s added.

The arms alternate within each round, so that a change in the machine's load hits them alike.
``skillstate`` is the console script beside this interpreter where there is one (what a user
and an agent host run), else ``python -m skillstate``. Run: ``skillstate bench startup [--rounds
N]``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

TARGET = 4.0
"""The most ``--help`` and ``--version`` may take, as a multiple of their floor."""
HOOK_TARGET = 5.0
"""The most ``skillstate hook claude`` may take, as a multiple of a bare interpreter start."""
SHELL_ADDED_S = 0.1
"""The most ``skillstate shell -- ls`` may add to ``ls``, in seconds."""


@dataclass(frozen=True, slots=True)
class Target:
    """How an arm is judged against its group's floor: at most ``ratio`` times it, or at most
    ``added_s`` seconds more."""

    ratio: float | None = None
    added_s: float | None = None

    def judge(self, seconds: float, floor: float) -> str:
        if self.ratio is not None:
            verdict = "ok" if seconds <= self.ratio * floor else "OVER"
            return f"at most {self.ratio:g}x: {verdict}"
        assert self.added_s is not None
        added = seconds - floor
        verdict = "ok" if added <= self.added_s else "OVER"
        return f"{added * 1000:+.1f} ms, at most +{self.added_s * 1000:g} ms: {verdict}"


@dataclass(frozen=True, slots=True)
class Arm:
    name: str
    argv: tuple[str, ...]
    target: Target | None = None
    """``None``: the floor of the arms after it, up to the next floor."""
    stdin: bytes = b""
    cwd: str | None = None


@dataclass(frozen=True, slots=True)
class Timing:
    """One arm's wall times, in seconds, one per round."""

    arm: Arm
    seconds: tuple[float, ...] = field(default=())

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def program(python: str = sys.executable) -> tuple[str, ...]:
    """How ``skillstate`` is run: the console script beside ``python``, else ``-m``."""
    script = Path(python).parent / "skillstate"
    if script.is_file() and os.access(script, os.X_OK):
        return (str(script),)
    return (python, "-m", "skillstate")


def hook_event(project: Path, command: str = "git status") -> bytes:
    """Claude Code's PreToolUse event for a ``Bash`` call of ``command`` in ``project``."""
    event = {
        "session_id": "bench",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Show the working tree status"},
        "cwd": str(project),
        "permission_mode": "default",
    }
    return json.dumps(event).encode()


def arms(project: Path, python: str = sys.executable) -> list[Arm]:
    """Three groups, each its floor first: ``--help`` and ``--version``; the hook; the shell
    (the last two in ``project``)."""
    command = program(python)
    ls = shutil.which("ls") or "ls"
    here = str(project)
    helped = Target(ratio=TARGET)
    return [
        Arm("python -c 'import click, rich'", (python, "-c", "import click, rich")),
        Arm("skillstate --help", (*command, "--help"), helped),
        Arm("skillstate --version", (*command, "--version"), helped),
        Arm("python -c 'import json'", (python, "-c", "import json")),
        Arm(
            "skillstate hook claude (git status)",
            (*command, "hook", "claude"),
            Target(ratio=HOOK_TARGET),
            stdin=hook_event(project),
            cwd=here,
        ),
        Arm("ls", (ls,), cwd=here),
        Arm(
            "skillstate shell -- ls",
            (*command, "shell", "--", "ls"),
            Target(added_s=SHELL_ADDED_S),
            cwd=here,
        ),
    ]


@contextmanager
def bench_project() -> Iterator[Path]:
    """A small git project (a few files, one commit) for the hook and the shell to work in."""
    with tempfile.TemporaryDirectory(prefix="skillstate-startup-") as folder:
        root = Path(folder) / "project"
        (root / "src").mkdir(parents=True)
        for n in range(8):
            (root / "src" / f"module_{n}.py").write_text(f"VALUE = {n}\n")
        (root / "README.md").write_text("A small project.\n")
        if shutil.which("git"):
            _git(root, "init", "-q")
            _git(root, "add", ".")
            _git(
                root,
                "-c",
                "user.name=bench",
                "-c",
                "user.email=bench@localhost",
                "commit",
                "-qm",
                "start",
            )
        yield root


def _git(root: Path, *words: str) -> None:
    subprocess.run(["git", *words], cwd=root, capture_output=True, check=False)


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
    subprocess.run(
        arm.argv,
        input=arm.stdin,
        cwd=arm.cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - began


def format_report(timings: Sequence[Timing]) -> str:
    """A line per arm: its median in ms, its ratio to its group's floor (the arm without a
    target before it) and, for the others, its verdict against its target."""
    width = max(len(t.arm.name) for t in timings)
    lines = [f"{'command':<{width}}  median ms  x floor  target"]
    floor = timings[0].median
    for timing in timings:
        if timing.arm.target is None:
            floor = timing.median
        ratio = timing.median / floor
        target = timing.arm.target
        verdict = "" if target is None else "  " + target.judge(timing.median, floor)
        lines.append(
            f"{timing.arm.name:<{width}}  {timing.median * 1000:9.1f}  {ratio:6.2f}x{verdict}"
        )
    runs = len(timings[0].seconds)
    lines.append(
        f"median of {runs} runs each, each a new process; each floor is the line above its group"
    )
    return "\n".join(lines)
