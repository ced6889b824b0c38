"""``review-loop``: a code review of a synthetic repository whose findings are asked for at
the end, seeded.

Each step reads one file (``read_file``, numbered lines, as Claude Code shows them) or one
diff (``git diff`` through ``shell``); about a third of them hold an issue (``eval`` on input,
TLS checks off, a shell command built from input, a hard-coded secret, MD5 for passwords).
The reviewer notices an issue in the result it reads and writes it down in the text beside its
next call, ``Finding F07: src/payments/refund_07.py:123 — eval() on request data``, where
``F07`` is the step that read it; a careful reviewer also notes it in Σ. The last step asks for
every finding; the score is the share reported with the right file and line.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from skillstate.bench.workload import Answer, Call, Score, ToolSpec, Variant
from skillstate.bench.workloads.coding_loop import TOOLS, log_uniform, module_text
from skillstate.bench.workloads.facts import (
    Fact,
    FactModel,
    PlannedStep,
    Probe,
    Use,
    score,
)
from skillstate.support import jsonio
from skillstate.testing.policies import Policy
from skillstate.testing.session_view import Call as SeenCall

DEFAULT_HORIZON = 50
MIN_HORIZON = 6
ISSUE_SHARE = 0.3

SYSTEM = (
    "You are a code reviewer. Read the files and diffs you are pointed at, and write down each "
    "issue you find as `Finding <id>: <file>:<line> — <what>`."
)
TASK = (
    "Review the payments service before the release: read each module and the diffs of this "
    "branch, and record every security or correctness issue you find."
)
FINAL = (
    "The review is over. List every finding you made, each with its id, file and line, "
    "from what you have seen."
)

#: The issues a reviewer looks for: the line planted in the code and what the finding says.
ISSUES = (
    ("    result = eval(request.args['expr'])", "eval() on request data"),
    ("    response = requests.get(url, verify=False)", "TLS verification turned off"),
    ("    subprocess.run(f'convert {name}', shell=True)", "shell command built from input"),
    ('    API_SECRET = "sk_live_51HxQ2eZvKYlo2C"', "hard-coded secret"),
    ("    digest = hashlib.md5(password.encode()).hexdigest()", "MD5 used for passwords"),
)
_WORDS = ("refund", "charge", "payout", "webhook", "ledger", "invoice", "card", "dispute")
_DIFF_FILE = re.compile(r"^\+\+\+ b/(\S+)$", re.M)
_HUNK = re.compile(r"^@@ -\d+,\d+ \+(\d+),\d+ @@")


@dataclass(frozen=True, slots=True)
class _Target:
    """What one step reviews: ``path``, as a file or a diff, and the planted issue's index in
    ``ISSUES`` and line, if any."""

    path: str
    diff: bool
    issue: int | None
    line: int


@dataclass(slots=True)
class ReviewLoop:
    """The ``review-loop`` workload (``bench.workload.Workload``); build it with ``build``."""

    horizon: int
    seed: int
    targets: tuple[_Target, ...]
    steps: tuple[PlannedStep, ...]
    probes: tuple[Probe, ...]
    name: str = "review-loop"
    system: str = SYSTEM
    tools: Sequence[ToolSpec] = TOOLS[:2]

    @property
    def facts(self) -> tuple[Fact, ...]:
        return tuple(f for probe in self.probes for f in probe.facts)

    def instruction(self, step: int) -> str | None:
        if step == 0:
            return TASK
        return FINAL if step == self.horizon - 1 else None

    def execute(self, call: Call) -> str:
        if call.name == "read_file":
            target = self._target(str(call.arguments.get("path", "")), diff=False)
            if target is None:
                return "error: no such file"
            return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(self._lines(target), 1))
        if call.name == "shell":
            command = str(call.arguments.get("command", ""))
            target = self._target(command.rsplit(" ", 1)[-1], diff=True)
            if not command.startswith("git diff") or target is None:
                return "Exit code: 128\nOutput:\nfatal: bad revision\n"
            return "Exit code: 0\nOutput:\n" + self._diff(target)
        return f"error: unknown tool {call.name}"

    def model(self, variant: Variant) -> Policy:
        return FactModel(self.steps, variant, notice, seed=self.seed, say_notes=True)

    def score(self, answers: Sequence[Answer]) -> Score:
        return score(self.probes, answers)

    def _target(self, path: str, *, diff: bool) -> _Target | None:
        return next((t for t in self.targets if t.path == path and t.diff == diff), None)

    def _lines(self, target: _Target) -> list[str]:
        rng = random.Random(f"review-loop:{self.seed}:{target.path}")
        lines = module_text(target.path, log_uniform(rng, 5_000, 30_000), rng).split("\n")
        if target.issue is not None:
            lines.insert(target.line - 1, ISSUES[target.issue][0])
        return lines

    def _diff(self, target: _Target) -> str:
        """A one-hunk diff around the target's line: context, a removed line, added lines."""
        lines = self._lines(target)
        start = max(1, target.line - 6)
        added = set(range(target.line - 1, min(len(lines), target.line + 2)))
        out = [
            f"diff --git a/{target.path} b/{target.path}",
            "index 3f2a9c1..8be07d4 100644",
            f"--- a/{target.path}",
            f"+++ b/{target.path}",
        ]
        shown = list(range(start - 1, min(len(lines), target.line + 8)))
        new_count = len(shown)
        old_count = new_count - len(added) + 1
        out.append(f"@@ -{start},{old_count} +{start},{new_count} @@")
        for i in shown:
            if i == min(added):
                out.append("-    pass")
            out.append(("+" if i in added else " ") + lines[i])
        return "\n".join(out) + "\n"


def notice(step: int, results: Sequence[tuple[SeenCall | None, str]]) -> list[tuple[str, str]]:
    """The findings in the results of ``step``: the planted issue's line in a numbered file
    (the path from the call) or in a diff (the path from its header, the line counted from
    the hunk's start)."""
    found: list[tuple[str, str]] = []
    for call, output in results:
        located = _in_diff(output) if output.startswith("Exit code") else _in_file(call, output)
        if located is None:
            continue
        path, line, what = located
        key = f"F{step:02d}"
        found.append((key, f"Finding {key}: {path}:{line} — {what}"))
    return found


def _in_file(call: SeenCall | None, output: str) -> tuple[str, int, str] | None:
    if call is None:
        return None
    path = str(jsonio.loads(call.arguments).get("path", ""))
    for text in output.split("\n"):
        number, _, code = text.partition("\t")
        for planted, what in ISSUES:
            if code == planted:
                return path, int(number), what
    return None


def _in_diff(output: str) -> tuple[str, int, str] | None:
    header = _DIFF_FILE.search(output)
    line = None
    for text in output.split("\n"):
        if hunk := _HUNK.match(text):
            line = int(hunk.group(1))
            continue
        if line is None or text.startswith("-"):
            continue
        for planted, what in ISSUES:
            if text == "+" + planted and header is not None:
                return header.group(1), line, what
        line += 1
    return None


def build(horizon: int = DEFAULT_HORIZON, seed: int = 0) -> ReviewLoop:
    """The review of ``horizon`` steps for ``seed``: steps 0 to ``horizon - 2`` review one
    target each; the last asks for the findings."""
    if horizon < MIN_HORIZON:
        raise ValueError(f"review-loop needs a horizon of at least {MIN_HORIZON}")
    rng = random.Random(f"review-loop:{seed}:plan")
    reviewed = horizon - 1
    with_issue = set(rng.sample(range(reviewed - 1), max(2, round((reviewed - 1) * ISSUE_SHARE))))
    targets = []
    for n in range(reviewed):
        path = f"src/payments/{rng.choice(_WORDS)}_{n:02d}.py"
        issue = rng.randrange(len(ISSUES)) if n in with_issue else None
        targets.append(_Target(path, rng.random() < 0.4, issue, rng.randrange(12, 120)))
    facts = tuple(
        Fact(
            f"F{n:02d}",
            re.compile(rf"Finding F{n:02d}: (\S+:\d+)"),
            f"{t.path}:{t.line}",
            f"Finding F{n:02d}",
            n,
        )
        for n, t in enumerate(targets)
        if t.issue is not None
    )
    probe = Probe(horizon - 1, FINAL, facts)
    steps = [PlannedStep((_use(t),)) for t in targets]
    steps.append(PlannedStep(probe=probe))
    return ReviewLoop(horizon, seed, tuple(targets), tuple(steps), (probe,))


def _use(target: _Target) -> Use:
    if target.diff:
        return Use("shell", {"command": f"git diff main -- {target.path}"})
    return Use("read_file", {"path": target.path})
