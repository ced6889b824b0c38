"""A shared store or Redis asked for where the ``shared`` extra is not installed, or tracing
where the ``otel`` extra is not: the gateway does not start, and says which package is missing
and how to install it."""

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
    ("module", "args", "said", "extra"),
    [
        ("asyncpg", ["--store", "postgresql://u@127.0.0.1:9/x"], "needs asyncpg", "shared"),
        ("redis", ["--redis", "redis://127.0.0.1:9/0"], "needs redis", "shared"),
        (
            "opentelemetry.sdk",
            ["--otel-endpoint", "http://127.0.0.1:9"],
            "needs opentelemetry-sdk",
            "otel",
        ),
    ],
    ids=["asyncpg", "redis", "otel"],
)
def test_a_missing_extra_is_said_at_start(
    module: str, args: list[str], said: str, extra: str, tmp_path: object
) -> None:
    code = _RUN.format(module=module, args=[*args, "--data-dir", str(tmp_path)])
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1, done.stderr
    assert said in done.stderr and f"pip install 'skillstate[{extra}]'" in done.stderr
    assert "Traceback" not in done.stderr
