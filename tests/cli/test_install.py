"""The checkout installs as a command: pip into a fresh virtual environment, as the README says,
and the installed ``skillstate`` answers with the files the package reads at run time (the
price catalog, the dashboard) inside it. Slow: pip builds the wheel and installs every
dependency (from its cache where it has them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillstate import __version__

ROOT = Path(__file__).resolve().parents[2]


def _environment(home: Path) -> dict[str, str]:
    """This process's environment without what would make the new venv run this checkout's
    source instead of what it installed (``PYTHONPATH``), or read the developer's settings."""
    kept = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
        and not key.startswith("SKILLSTATE_")
    }
    return {**kept, "HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.mark.slow
def test_the_checkout_installs_as_the_skillstate_command(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    env = _environment(tmp_path / "home")
    # The new venv gets no pip of its own: this environment's pip installs into it (``--python``),
    # which takes half the time of the older pip a new venv comes with.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=env, timeout=120
    )
    python = str(venv / "bin" / "python")
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", str(ROOT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(venv / "bin" / "skillstate"), *args],
            env=env,
            cwd=tmp_path,  # not the checkout, so nothing there can be imported by accident
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    version = run("--version")
    assert (version.returncode, version.stdout) == (0, f"skillstate {__version__}\n")
    helped = run("--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("Usage: skillstate [OPTIONS] [COMMAND]")
    prices = run("prices")  # the catalog is a data file of the package
    assert prices.returncode == 0, prices.stderr
    assert "gpt-4.1" in prices.stdout
    config = run("config")
    assert config.returncode == 0, config.stderr
    assert config.stdout.split("\n")[0].split()[:2] == ["host", "127.0.0.1"]
    where = subprocess.run(
        [
            python,
            "-c",
            "import importlib.resources as r, skillstate; print(skillstate.__file__); "
            "print(r.files('skillstate.server').joinpath('ui', 'index.html').is_file())",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    module, dashboard = where.stdout.split()
    assert Path(module).is_relative_to(venv)  # the installed copy, not this checkout
    assert dashboard == "True"
