"""The installed console scripts run: proof that the entry points in pyproject.toml resolve."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from skillstate import __version__

BIN = Path(sys.executable).parent


def run(
    program: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {key: value for key, value in os.environ.items() if not key.startswith("SKILLSTATE_")}
    return subprocess.run(
        [str(BIN / program), *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_skillstate_version() -> None:
    result = run("skillstate", "--version")
    assert (result.returncode, result.stdout) == (0, f"skillstate {__version__}\n")


def test_version_reads_no_configuration() -> None:
    result = run("skillstate", "--version", env={"SKILLSTATE_PORT": "abc"})
    assert result.returncode == 0, result.stderr


def test_skillstate_proxy_version() -> None:
    result = run("skillstate-proxy", "--version", env={"SKILLSTATE_PORT": "abc"})
    assert (result.returncode, result.stdout) == (0, f"skillstate-proxy {__version__}\n")
    result = run("skillstate", "serve", "--version")
    assert (result.returncode, result.stdout) == (0, f"skillstate {__version__}\n")


def test_skillstate_config(tmp_path: Path) -> None:
    env = {"SKILLSTATE_PORT": "9999", "HOME": str(tmp_path)}
    result = run("skillstate", "config", "--json", env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["port"] == {"value": 9999, "source": "environment SKILLSTATE_PORT"}


def test_skillstate_proxy_is_serve() -> None:
    result = run("skillstate-proxy", "--port", "abc")
    assert result.returncode == 2
    assert result.stderr == "config error: port='abc' from command line --port: not an integer\n"
    result = run("skillstate-proxy", "--help")
    assert result.returncode == 0
    assert result.stdout.startswith("Usage: skillstate-proxy [OPTIONS]")
