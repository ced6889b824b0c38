"""``coding-loop``: a coding agent's session shaped like Codex or Claude Code traffic, seeded.

The agent fixes a failing test in a synthetic shop service: it reads files of 5 to 50 KB
(Python with constants, function names, ports), often two or three in one turn (parallel
calls), greps, edits with ``apply_patch`` (a small diff; the result is ``applied``) and runs
the tests (pytest logs of 5 to 15 KB, some failing with an assertion and its numbers). At
about 60% of the horizon the user adds an instruction (check the retry limit of the HTTP
client), which the agent follows on the next step. After about 80% the user asks, one probe at
a time (below 12 steps, in one probe at the last step), for identifiers and numbers seen
early: the server's port, the cache namespace, the expected value of the first failing
assertion, the bulk-discount function's name, the retry limit. Each fact shows in exactly
one tool result, so where the model found it says what the arm kept.

Everything comes from ``seed``; the tools answer from their arguments alone, so every arm
gets the same bytes for the same call.
"""

from __future__ import annotations

import math
import random
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from skillstate.bench.workload import Answer, Call, Score, ToolSpec, Variant
from skillstate.bench.workloads.facts import (
    Fact,
    FactModel,
    PlannedStep,
    Probe,
    Use,
    fact_noticer,
    score,
)
from skillstate.testing.policies import Policy

DEFAULT_HORIZON = 120
MIN_HORIZON = 5
"""Steps 0 to 2 read the early facts, one step reads the retry limit, one probes."""
SHORT_HORIZON = 12
"""Below it the plan is the short one: a single probe of every fact at the last step."""
MIN_FILE_BYTES, MAX_FILE_BYTES = 5_000, 50_000
MIN_LOG_BYTES, MAX_LOG_BYTES = 5_000, 15_000

SERVER_FILE = "config/server.py"
CONSTANTS_FILE = "src/shop/constants.py"
PRICING_FILE = "src/shop/pricing.py"
RETRY_FILE = "src/shop/http_client.py"
FIRST_TESTS = "tests/test_checkout.py"

SYSTEM = (
    "You are a coding agent working in a local repository. Use the tools to read files, run "
    "commands and apply patches. Keep changes small and run the tests after each edit."
)
TASK = (
    "The checkout tests fail after the pricing refactor. Find out why and fix it without "
    "changing the public API."
)
CARRY_ON = "Thanks. Carry on with the task."

#: The words generated modules are made of; none of them is part of a fact's text.
_WORDS = (
    "order", "cart", "item", "price", "invoice", "customer", "stock", "refund", "coupon",
    "ledger", "payment", "shipment", "address", "tax", "currency", "session", "token",
    "report", "batch", "queue", "event", "window", "quota", "region", "vendor", "catalog",
)  # fmt: skip
_CONSTANTS = (
    "TIMEOUT_SECONDS", "PAGE_SIZE", "MAX_ITEMS", "CACHE_TTL", "BATCH_LIMIT", "POOL_SIZE",
    "FLUSH_INTERVAL_MS", "QUEUE_DEPTH", "LOCK_TIMEOUT", "SHARD_COUNT", "BUFFER_BYTES",
)  # fmt: skip

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
"""Claude Code and OpenCode name the draft in every tool's schema (tests/fixtures/recorded/);
the model never needs it, and the ``schemas`` lane takes it out."""

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "read_file",
        "Read a file of the repository and return its content.",
        {
            "$schema": DRAFT_07,
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Path from the root."}},
            "required": ["path"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        "shell",
        "Run a shell command in the repository and return its output and exit code.",
        {
            "$schema": DRAFT_07,
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line."},
                "workdir": {"type": "string", "description": "Working directory."},
                "timeout_ms": {"type": "integer", "description": "Time limit."},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        "apply_patch",
        "Apply a patch in the apply_patch format (*** Begin Patch ... *** End Patch).",
        {
            "$schema": DRAFT_07,
            "type": "object",
            "properties": {"input": {"type": "string", "description": "The whole patch."}},
            "required": ["input"],
            "additionalProperties": False,
        },
    ),
)


@dataclass(frozen=True, slots=True)
class _Truth:
    port: int
    namespace: str
    expected: int
    got: int
    discount: str
    retries: int


@dataclass(slots=True)
class CodingLoop:
    """The ``coding-loop`` workload (``bench.workload.Workload``); build it with ``build``."""

    horizon: int
    seed: int
    steps: tuple[PlannedStep, ...]
    probes: tuple[Probe, ...]
    instructions: dict[int, str]
    truth: _Truth
    modules: tuple[str, ...]
    name: str = "coding-loop"
    system: str = SYSTEM
    tools: Sequence[ToolSpec] = TOOLS
    _files: dict[str, str] = field(default_factory=dict)

    @property
    def facts(self) -> tuple[Fact, ...]:
        return tuple(f for probe in self.probes for f in probe.facts)

    def instruction(self, step: int) -> str | None:
        return self.instructions.get(step)

    def execute(self, call: Call) -> str:
        if call.name == "read_file":
            return self.file(str(call.arguments.get("path", "")))
        if call.name == "apply_patch":
            found = re.search(r"\*\*\* Update File: (\S+)", str(call.arguments.get("input", "")))
            return "applied" if found else "error: not a patch in the apply_patch format"
        if call.name == "shell":
            return self._shell(str(call.arguments.get("command", "")))
        return f"error: unknown tool {call.name}"

    def model(self, variant: Variant) -> Policy:
        return FactModel(self.steps, variant, fact_noticer(self.facts), seed=self.seed)

    def score(self, answers: Sequence[Answer]) -> Score:
        return score(self.probes, answers)

    def file(self, path: str) -> str:
        """A file's content (the same on every call): a generated module, or the file of one
        of the facts."""
        if path not in self._files:
            rng = random.Random(f"coding-loop:{self.seed}:file:{path}")
            self._files[path] = module_text(
                path, log_uniform(rng, MIN_FILE_BYTES, MAX_FILE_BYTES), rng
            )
            special = {
                SERVER_FILE: f"SERVER_PORT = {self.truth.port}",
                CONSTANTS_FILE: f'CACHE_NAMESPACE = "{self.truth.namespace}"',
                RETRY_FILE: f"MAX_RETRIES = {self.truth.retries}",
                PRICING_FILE: f"def {self.truth.discount}(order, rate):\n"
                "    return order.total * (1 - rate)\n",
            }
            if path in special:
                lines = self._files[path].split("\n\n")
                at = len(lines) // 3
                self._files[path] = "\n\n".join([*lines[:at], special[path], *lines[at:]])
        return self._files[path]

    def _shell(self, command: str) -> str:
        words = shlex.split(command)
        if words[:3] == ["python", "-m", "pytest"]:
            code, output = self._tests(words[-1])
        elif words[:1] == ["rg"]:
            code, output = 0, self._grep(words[-2])
        else:
            code, output = 127, f"bash: {words[0] if words else ''}: command not found\n"
        wall = random.Random(command).uniform(0.2, 9.0)
        return f"Exit code: {code}\nWall time: {wall:.1f} seconds\nOutput:\n{output}"

    def _tests(self, path: str) -> tuple[int, str]:
        rng = random.Random(f"coding-loop:{self.seed}:tests:{path}")
        name = path.rsplit("/", 1)[-1].removesuffix(".py").removeprefix("test_")
        failing = path == FIRST_TESTS or rng.random() < 0.35
        return (1 if failing else 0), _pytest_log(name, path, rng, failing, self.truth)

    def _grep(self, pattern: str) -> str:
        rng = random.Random(f"coding-loop:{self.seed}:grep:{pattern}")
        lines = []
        if pattern.startswith("def apply_bulk_discount"):
            name = self.truth.discount
            lines.append(f"{PRICING_FILE}:{rng.randrange(80, 400)}:def {name}(order, rate):")
            for module in rng.sample(self.modules, 3):
                lines.append(f"{module}:{rng.randrange(1, 900)}:    total = {name}(order, 0.05)")
            return "\n".join(lines) + "\n"
        for _ in range(rng.randrange(6, 40)):
            module = rng.choice(self.modules)
            word = rng.choice(_WORDS)
            lines.append(
                f"{module}:{rng.randrange(1, 900)}:    {word}_{pattern} = {word}.{pattern}"
            )
        return "\n".join(lines) + "\n"


def build(horizon: int = DEFAULT_HORIZON, seed: int = 0) -> CodingLoop:
    """The session of ``horizon`` steps for ``seed`` (at least ``MIN_HORIZON`` steps).

    From ``SHORT_HORIZON`` steps on, probes come one fact at a time after 80% of the horizon
    and a final answer closes the session; below it, the early facts are read at steps 0 to
    2, the retry limit at about 60% (never before step 3), and one probe of all five facts is
    the last step. Changing the long plan changes every published figure: the test pins
    horizon 120's."""
    if horizon < MIN_HORIZON:
        raise ValueError(f"coding-loop needs a horizon of at least {MIN_HORIZON}")
    rng = random.Random(f"coding-loop:{seed}:plan")
    truth = _Truth(
        port=rng.randrange(1024, 65_000),
        namespace=f"shop-{rng.randrange(16**6):06x}",
        expected=rng.randrange(1000, 99_999),
        got=rng.randrange(1000, 99_999),
        discount=f"apply_bulk_discount_{rng.choice(_WORDS)}{rng.randrange(2, 99)}",
        retries=rng.randrange(3, 17),
    )
    modules = tuple(f"src/shop/{rng.choice(_WORDS)}_{i:02d}.py" for i in range(40))
    short = horizon < SHORT_HORIZON
    mid = min(max(round(horizon * 0.6), 3), horizon - 2) if short else round(horizon * 0.6)
    facts = _facts(truth, mid)
    steps: list[PlannedStep] = [
        PlannedStep(
            (Use("read_file", {"path": SERVER_FILE}), Use("read_file", {"path": CONSTANTS_FILE}))
        ),
        PlannedStep((_shell(f"python -m pytest -q {FIRST_TESTS}"),)),
        PlannedStep((_shell("rg -n 'def apply_bulk_discount' src"),)),
    ]
    instructions = {0: TASK}
    remember = f"Also check the retry limit in {RETRY_FILE} before you finish."
    first_probe = max(mid + 2, math.ceil(horizon * 0.8))
    slots = [horizon - 1] if short else list(range(first_probe, horizon - 1, 2))
    probes = _probes(facts, slots)
    at = {probe.step: probe for probe in probes}
    for n in range(3, horizon if short else horizon - 1):
        if n in at:
            steps.append(PlannedStep(probe=at[n]))
            instructions[n] = at[n].text
            if n + 1 < horizon:
                instructions[n + 1] = CARRY_ON
        elif n == mid:
            steps.append(PlannedStep((Use("read_file", {"path": RETRY_FILE}),), remember=remember))
            instructions[n] = remember
        else:
            steps.append(PlannedStep(_uses(rng, modules)))
    if not short:  # a short session ends with its probe's answer
        steps.append(PlannedStep(final="The checkout tests pass now; the rounding is fixed."))
    return CodingLoop(horizon, seed, tuple(steps), probes, instructions, truth, modules)


def _facts(truth: _Truth, mid: int) -> list[tuple[Fact, str]]:
    def fact(
        key: str, pattern: str, value: object, query: str, step: int, question: str
    ) -> tuple[Fact, str]:
        return Fact(key, re.compile(pattern), str(value), query, step), question

    return [
        fact("server-port", r"SERVER_PORT = (\d+)", truth.port, "SERVER_PORT", 0,
             f"what port did {SERVER_FILE} set (SERVER_PORT)?"),
        fact("first-failure-expected", r"assert checkout_total\(cart\) == (\d+)", truth.expected,
             "checkout_total(cart)", 1,
             "what was the expected value of the failing assertion in the first test run?"),
        fact("cache-namespace", r'CACHE_NAMESPACE = \\?"([\w.-]+)', truth.namespace,
             "CACHE_NAMESPACE", 0, f"what is the CACHE_NAMESPACE in {CONSTANTS_FILE}?"),
        fact("discount-function", r"def (apply_bulk_discount_\w+)\(", truth.discount,
             "def apply_bulk_discount", 2,
             "what is the name of the bulk-discount function the grep found?"),
        fact("retry-limit", r"MAX_RETRIES = (\d+)", truth.retries, "MAX_RETRIES", mid,
             f"what retry limit (MAX_RETRIES) did {RETRY_FILE} set?"),
    ]  # fmt: skip


def _probes(facts: list[tuple[Fact, str]], slots: list[int]) -> tuple[Probe, ...]:
    """One probe per fact while there are slots; with fewer slots, the facts share them."""
    if not slots:
        raise ValueError("no room for probes")
    count = min(len(slots), len(facts))
    grouped: list[list[tuple[Fact, str]]] = [[] for _ in range(count)]
    for i, item in enumerate(facts):
        grouped[i % count].append(item)
    # Spread over the slots: the first probe early in the late part, the last near the end.
    chosen = [slots[round(i * (len(slots) - 1) / max(1, count - 1))] for i in range(count)]
    probes = []
    for slot, group in zip(chosen, grouped, strict=True):
        questions = " Also, ".join(q for _, q in group)
        text = f"Quick question before you go on: {questions} Answer from what you saw."
        probes.append(Probe(slot, text, tuple(f for f, _ in group)))
    return tuple(probes)


def _shell(command: str) -> Use:
    return Use("shell", {"command": command, "workdir": "/home/user/shop", "timeout_ms": 120_000})


def _uses(rng: random.Random, modules: Sequence[str]) -> tuple[Use, ...]:
    roll = rng.random()
    if roll < 0.3:
        return (Use("read_file", {"path": rng.choice(modules)}),)
    if roll < 0.45:
        return tuple(Use("read_file", {"path": p}) for p in rng.sample(modules, rng.choice((2, 3))))
    if roll < 0.7:
        module = rng.choice(modules).rsplit("/", 1)[-1]
        return (_shell(f"python -m pytest -q tests/test_{module}"),)
    if roll < 0.82:
        return (_shell(f"rg -n '{rng.choice(_WORDS)}' src"),)
    path = rng.choice(modules)
    word = rng.choice(_WORDS)
    patch = (
        f"*** Begin Patch\n*** Update File: {path}\n@@ def {word}_total\n"
        f"-    return {word}.amount\n+    return round({word}.amount, 2)\n*** End Patch\n"
    )
    return (Use("apply_patch", {"input": patch}),)


def log_uniform(rng: random.Random, low: int, high: int) -> int:
    """Log-uniform in [low, high]: most outputs are small, a few are big."""
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def module_text(path: str, size: int, rng: random.Random) -> str:
    """About ``size`` bytes of plausible Python for ``path``: constants, a class, functions."""
    stem = path.rsplit("/", 1)[-1].removesuffix(".py")
    parts = [
        f'"""{stem}: part of the shop service."""',
        "from __future__ import annotations\n\nimport logging\nfrom dataclasses import dataclass",
        "\n".join(f"{c} = {rng.randrange(2, 10_000)}" for c in rng.sample(_CONSTANTS, 4)),
    ]
    total = sum(len(p) + 2 for p in parts)
    n = 0
    while total < size:
        a, b = rng.choice(_WORDS), rng.choice(_WORDS)
        if n % 5 == 0:
            block = (
                f"@dataclass\nclass {a.title()}{b.title()}{n}:\n    {a}_id: int\n"
                f'    {b}: str = "{b}-{rng.randrange(100)}"\n'
                f"    limit: int = {rng.randrange(1, 500)}"
            )
        else:
            k = rng.randrange(2, 97)
            block = (
                f"def {a}_{b}_{n}({a}, {b}=None):\n"
                f'    """Return the {b} of a {a}, scaled by {k}."""\n'
                f'    logging.debug("{a}_{b}_{n} %s", {a})\n'
                f"    value = {a}.amount * {k} + len({b} or ())\n"
                f"    if value > {rng.randrange(100, 99_999)}:\n"
                f"        return value // {k}\n"
                f"    return value"
            )
        parts.append(block)
        total += len(block) + 2
        n += 1
    return "\n\n".join(parts) + "\n"


def _pytest_log(name: str, path: str, rng: random.Random, failing: bool, truth: _Truth) -> str:
    """A verbose pytest log of 5 to 15 KB; a failing one ends in a failure report."""
    target = log_uniform(rng, MIN_LOG_BYTES, MAX_LOG_BYTES - 500)
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.12.7, pytest-8.3.4, pluggy-1.5.0 -- /usr/bin/python3",
        "rootdir: /home/user/shop",
        "configfile: pyproject.toml",
        "plugins: asyncio-0.24.0, hypothesis-6.118.0",
    ]
    cases: list[str] = []
    body = 0
    while body < target - (1_000 if failing else 450):
        cases.append(f"{name}_{rng.choice(_WORDS)}_{len(cases)}")
        body += len(path) + len(cases[-1]) + 20
    failed = rng.randrange(len(cases)) if failing else -1
    if path == FIRST_TESTS:
        cases[failed] = "checkout_total_rounding"
    lines.append(f"collected {len(cases)} items")
    lines.append("")
    for i, case in enumerate(cases):
        status = "FAILED" if i == failed else "PASSED"
        lines.append(f"{path}::test_{case} {status} [{(i + 1) * 100 // len(cases):3d}%]")
    if failing:
        if path == FIRST_TESTS:
            test, check = f"test_{cases[failed]}", "checkout_total(cart)"
            expected, got = truth.expected, truth.got
        else:
            test, check = f"test_{cases[failed]}", f"{cases[failed]}(value)"
            expected, got = rng.randrange(1000), rng.randrange(1000)
        lines += [
            "",
            "=================================== FAILURES ===================================",
            f"_{'_' * 20} {test} {'_' * 20}",
            "",
            f"    def {test}():",
            f"        value = make_fixture({rng.randrange(1, 50)})",
            f">       assert {check} == {expected}",
            f"E       assert {got} == {expected}",
            f"E        +  where {got} = {check}",
            "",
            f"{path}:{rng.randrange(10, 400)}: AssertionError",
            "=========================== short test summary info ============================",
            f"FAILED {path}::{test} - assert {got} == {expected}",
            f"========================= 1 failed, {len(cases) - 1} passed in "
            f"{rng.uniform(0.5, 9):.2f}s =========================",
        ]
    else:
        took = f" {len(cases)} passed in {rng.uniform(0.5, 9):.2f}s "
        lines.append(took.center(80, "="))
    return "\n".join(lines) + "\n"
