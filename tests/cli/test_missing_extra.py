"""A shared store or Redis asked for where the ``shared`` extra is not installed: the gateway
does not start, and says which package is missing and how to install it."""

from __future__ import annotations

import subprocess
import sys

import pytest

_RUN = """
import sys
sys.modules[{module!r}] = None  # as if it were not installed
from skillstate.cli.main import main
sys.argv = ["skillstate", "serve", "--port", "1", *{args!r}]
main()
"""


@pytest.mark.parametrize(
    ("module", "args", "said"),
    [
        ("asyncpg", ["--store", "postgresql://u@127.0.0.1:9/x"], "needs asyncpg"),
        ("redis", ["--redis", "redis://127.0.0.1:9/0"], "needs redis"),
    ],
    ids=["asyncpg", "redis"],
)
def test_a_missing_extra_is_said_at_start(
    module: str, args: list[str], said: str, tmp_path: object
) -> None:
    code = _RUN.format(module=module, args=[*args, "--data-dir", str(tmp_path)])
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1, done.stderr
    assert said in done.stderr and "pip install 'skillstate[shared]'" in done.stderr
    assert "Traceback" not in done.stderr
