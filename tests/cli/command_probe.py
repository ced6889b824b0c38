"""``skillstate ARGS`` run in a new interpreter as the console script runs it, reporting its
exit code, its output and every module it imported (the import tests of ``--help``,
``--version``, ``hook`` and ``shell``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import skillstate

SRC = str(Path(skillstate.__file__).parents[1])

_PROBE = """
import json, sys
from skillstate.cli.main import main
sys.argv = ["skillstate", *sys.argv[1:]]
code = 0
try:
    main()
except SystemExit as done:
    code = done.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


@dataclass(frozen=True, slots=True)
class Probed:
    code: int | str | None
    """The exit code ``main`` gave (``None`` or 0: success)."""
    stdout: str
    modules: list[str]


def probe(
    *args: str, cwd: Path | None = None, stdin: str = "", env: Mapping[str, str] | None = None
) -> Probed:
    """Run ``skillstate ARGS`` with this checkout's sources first on the path."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=cwd,
        input=stdin,
        env={**os.environ, "PYTHONPATH": SRC, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    report = json.loads(done.stderr.splitlines()[-1])
    return Probed(report["code"], done.stdout, report["modules"])
