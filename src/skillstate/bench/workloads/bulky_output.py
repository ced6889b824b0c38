"""``bulky-output``: a tool loop whose second turn fetches one large JSON document, seeded.

The agent reconciles a warehouse's stock. At step 0 it reads a small config file; at step 1
it calls ``fetch_inventory``, which returns one JSON document of about 120 KB (about 30,000
o200k tokens), indented as Python's ``json`` writes it: a few header fields and 256 stock
records, each with an id, a lot code, a name, nested stock and bin numbers, a price, a
supplier and a note. Every other result of the session is small (a
few hundred bytes: ``read_file`` of short snippets, ``run`` of scripts and tests), for about
15 more steps. At the last step the user asks for the lot code of one record in the middle
of the document: that code shows nowhere else, so where the model found it says what the arm
kept of the document (whole in the context, in Σ, through ``recall`` of the archived
original, or lost).

It is the benchmark of issue 29 (``state.bulky``): hybrid mode offers ``recall`` in the
request that adds the document, the ``outputs`` lane replaces it by its view there and
archives it, and no later request carries it whole, where pass-through re-sends it on every
turn. The records hold nothing the view's identifier sidecar lists (no paths, hashes or
codes), so the view does not give the probed code away.

Everything comes from ``seed``; the tools answer from their arguments alone, so every arm
gets the same bytes for the same call.
"""

from __future__ import annotations

import json
import random
import re
import shlex
import string
from collections.abc import Sequence
from dataclasses import dataclass

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

DEFAULT_HORIZON = 17
MIN_HORIZON = 4
"""Step 0 reads the config, step 1 fetches the document, one small step, then the probe."""
RECORDS = 256
"""Records in the document: about 120 KB of JSON, about 30,000 tokens."""
DOCUMENT_STEP = 1

CONFIG_FILE = "config/warehouses.toml"
SYSTEM = (
    "You are an operations agent with access to a warehouse's systems. Use the tools to "
    "fetch inventory, read files and run commands. Keep each step small."
)

_NOUNS = (
    "bracket", "hinge", "valve", "gasket", "bearing", "washer", "spring", "clamp", "pulley",
    "sprocket", "flange", "coupler", "bushing", "fitting", "nozzle", "sensor", "relay", "cable",
)  # fmt: skip
_ADJECTIVES = (
    "steel", "brass", "nylon", "copper", "rubber", "alloy", "ceramic", "zinc", "titanium",
    "heavy", "compact", "sealed", "threaded", "flexible", "insulated", "coated",
)  # fmt: skip
_SUPPLIERS = (
    "Norvik", "Altberg", "Kestrel", "Maronne", "Oskarsen", "Tideway", "Brightmoor", "Vellan",
)  # fmt: skip
_NOTES = (
    "counted at the last cycle count", "kept in the dry section", "moved from the overflow area",
    "reserved for the spring orders", "checked by the night shift", "labelled for export",
    "returned by a customer in good condition", "waiting for a quality check",
    "ordered from the usual supplier", "packed in cartons of twelve",
    "stored near the loading dock", "marked for the quarterly audit",
)  # fmt: skip
_LOT_CHARS = string.ascii_uppercase + string.digits
_SCRIPTS = ("reorder", "low_stock", "reconcile", "forecast", "audit", "transfers")

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "fetch_inventory",
        "Fetch a warehouse's full inventory as one JSON document.",
        {
            "type": "object",
            "properties": {"warehouse": {"type": "string", "description": "Warehouse name."}},
            "required": ["warehouse"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        "read_file",
        "Read a file of the operations repository and return its content.",
        {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Path from the root."}},
            "required": ["path"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        "run",
        "Run a command in the operations repository and return its output and exit code.",
        {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command line."}},
            "required": ["command"],
            "additionalProperties": False,
        },
    ),
)


@dataclass(frozen=True, slots=True)
class _Truth:
    warehouse: str
    item: str
    """The id of the record whose lot code is probed."""
    lot: str


@dataclass(slots=True)
class BulkyOutput:
    """The ``bulky-output`` workload (``bench.workload.Workload``); build it with ``build``."""

    horizon: int
    seed: int
    steps: tuple[PlannedStep, ...]
    probes: tuple[Probe, ...]
    instructions: dict[int, str]
    truth: _Truth
    name: str = "bulky-output"
    system: str = SYSTEM
    tools: Sequence[ToolSpec] = TOOLS
    _document: str | None = None

    @property
    def facts(self) -> tuple[Fact, ...]:
        return tuple(f for probe in self.probes for f in probe.facts)

    def instruction(self, step: int) -> str | None:
        return self.instructions.get(step)

    def execute(self, call: Call) -> str:
        if call.name == "fetch_inventory":
            if call.arguments.get("warehouse") != self.truth.warehouse:
                return json.dumps({"error": "unknown warehouse"})
            return self.document()
        if call.name == "read_file":
            return self._file(str(call.arguments.get("path", "")))
        if call.name == "run":
            return self._run(str(call.arguments.get("command", "")))
        return f"error: unknown tool {call.name}"

    def model(self, variant: Variant) -> Policy:
        return FactModel(self.steps, variant, fact_noticer(self.facts), seed=self.seed)

    def score(self, answers: Sequence[Answer]) -> Score:
        return score(self.probes, answers)

    def document(self) -> str:
        """The inventory (the same on every call); the probed record sits in its middle
        third, and its lot code shows nowhere else in the session."""
        if self._document is None:
            self._document = inventory(self.seed, self.truth)
        return self._document

    def _file(self, path: str) -> str:
        """A short numbered snippet of ``path`` (a few hundred bytes)."""
        rng = random.Random(f"bulky-output:{self.seed}:file:{path}")
        if path == CONFIG_FILE:
            lines = [
                "[warehouses]",
                f'default = "{self.truth.warehouse}"',
                f"reorder_margin = {rng.randrange(5, 30)}",
                f"safety_days = {rng.randrange(2, 14)}",
                'report_format = "csv"',
            ]
        else:
            stem = path.rsplit("/", 1)[-1].removesuffix(".py")
            lines = [
                f'"""{stem}: part of the stock tools."""',
                "",
                f"THRESHOLD = {rng.randrange(5, 200)}",
                "",
                f"def {stem}(records, margin={rng.randrange(1, 20)}):",
                f'    """Records of {stem} below the threshold, less the margin."""',
                "    low = [r for r in records if r.qty - r.reserved < THRESHOLD - margin]",
                f"    return sorted(low, key=lambda r: r.{rng.choice(('qty', 'price', 'id'))})",
            ]
        return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, 1)) + "\n"

    def _run(self, command: str) -> str:
        """A short command result: a test run or a script's summary."""
        words = shlex.split(command)
        rng = random.Random(f"bulky-output:{self.seed}:run:{command}")
        if words[:3] == ["python", "-m", "pytest"]:
            passed = rng.randrange(3, 19)
            output = f"{'.' * passed}\n{passed} passed in {rng.uniform(0.1, 2.5):.2f}s\n"
        elif words[:1] == ["python"] and len(words) > 1:
            script = words[1].rsplit("/", 1)[-1].removesuffix(".py")
            output = (
                f"{script}: {rng.randrange(20, 400)} records checked, "
                f"{rng.randrange(0, 12)} below threshold, {rng.randrange(0, 5)} transfers "
                f"proposed (dry run)\n"
            )
        else:
            return f"Exit code: 127\nOutput:\nbash: {words[0] if words else ''}: not found\n"
        return f"Exit code: 0\nWall time: {rng.uniform(0.1, 3.0):.1f} seconds\nOutput:\n{output}"


def inventory(seed: int, truth: _Truth) -> str:
    """The document ``fetch_inventory`` returns for ``truth.warehouse``: JSON indented by four
    spaces, as Python's ``json`` module writes it; every lot code distinct, and the probed
    record's the one ``truth`` holds."""
    rng = random.Random(f"bulky-output:{seed}:inventory")
    lots = {truth.lot}
    items = []
    for n in range(RECORDS):
        item = _item_id(n)
        if item == truth.item:
            lot = truth.lot
        else:
            lot = _lot(rng)
            while lot in lots:
                lot = _lot(rng)
            lots.add(lot)
        first, then = rng.sample(_NOTES, 2)
        items.append(
            {
                "id": item,
                "lot": lot,
                "name": f"{rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)}",
                "stock": {"on_hand": rng.randrange(0, 900), "reserved": rng.randrange(0, 40)},
                "price": round(rng.uniform(0.5, 400.0), 2),
                "bin": {"aisle": rng.randrange(1, 60), "shelf": rng.randrange(1, 9)},
                "supplier": rng.choice(_SUPPLIERS),
                "note": f"{first.capitalize()}, then {then}.",
            }
        )
    document = {"warehouse": truth.warehouse, "currency": "EUR", "count": RECORDS, "items": items}
    return json.dumps(document, indent=4) + "\n"


def _item_id(n: int) -> str:
    return f"item-{n:05d}"


def _lot(rng: random.Random) -> str:
    """A lot code, ``LOT-`` and two groups of four: no identifier kind a view lists."""
    first = "".join(rng.choice(_LOT_CHARS) for _ in range(4))
    second = "".join(rng.choice(_LOT_CHARS) for _ in range(4))
    return f"LOT-{first}-{second}"


def build(horizon: int = DEFAULT_HORIZON, seed: int = 0) -> BulkyOutput:
    """The session of ``horizon`` steps for ``seed`` (at least ``MIN_HORIZON``): the config
    at step 0, the document at step 1, small reads and runs after it, and the probe of the
    lot code as the last step."""
    if horizon < MIN_HORIZON:
        raise ValueError(f"bulky-output needs a horizon of at least {MIN_HORIZON}")
    rng = random.Random(f"bulky-output:{seed}:plan")
    warehouse = f"{rng.choice(('north', 'south', 'east', 'west', 'harbour'))}-{rng.randrange(2, 9)}"
    item = _item_id(rng.randrange(RECORDS // 3, 2 * RECORDS // 3))
    truth = _Truth(warehouse, item, _lot(random.Random(f"bulky-output:{seed}:probed")))
    # The record's lot follows its id within the record (no brace between), in the document,
    # in a recall excerpt (numbered lines) or quoted in Σ (escaped quotes).
    fact = Fact(
        "probed-lot",
        re.compile(rf'{item}\\?",[^{{}}]*?\\?"lot\\?": \\?"(LOT-[0-9A-Z]{{4}}-[0-9A-Z]{{4}})'),
        truth.lot,
        item,
        DOCUMENT_STEP,
    )
    question = (
        f"Before you finish: what lot code does the inventory of {warehouse} give for "
        f"{item}? Answer from what you saw."
    )
    probe = Probe(horizon - 1, question, (fact,))
    steps = [
        PlannedStep((Use("read_file", {"path": CONFIG_FILE}),)),
        PlannedStep((Use("fetch_inventory", {"warehouse": warehouse}),)),
        *(PlannedStep((_small(rng),)) for _ in range(2, horizon - 1)),
        PlannedStep(probe=probe),
    ]
    task = (
        f"The low-stock report of warehouse {warehouse} disagrees with its inventory. Fetch "
        "the inventory, check the stock scripts and fix the report."
    )
    instructions = {0: task, horizon - 1: question}
    return BulkyOutput(horizon, seed, tuple(steps), (probe,), instructions, truth)


def _small(rng: random.Random) -> Use:
    """One small step: a script's source, a dry run, or its tests."""
    script = rng.choice(_SCRIPTS)
    roll = rng.random()
    if roll < 0.4:
        return Use("read_file", {"path": f"scripts/{script}.py"})
    if roll < 0.7:
        return Use("run", {"command": f"python scripts/{script}.py --dry-run"})
    return Use("run", {"command": f"python -m pytest -q tests/test_{script}.py"})
