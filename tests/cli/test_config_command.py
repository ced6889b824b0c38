"""skillstate config: one key a line with value and source; --json for programs."""

from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillstate.cli.main import cli
from skillstate.config import KEYS
from skillstate.pipeline.switches import names
from skillstate.state.options import CollapseOptions

KEY = "sk-proj-0123456789abcdefwxyz"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [name for name in os.environ if name.startswith("SKILLSTATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def lines(stdout: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in stdout.splitlines()}


def test_one_line_per_key_with_value_and_source(tmp_path: Path) -> None:
    config = tmp_path / "skillstate.toml"
    config.write_text('mode = "paper"\nport = 8000\n')
    env = {"SKILLSTATE_PORT": "8001", "SKILLSTATE_API_KEY": KEY}
    args = ["config", "--config", str(config), "--upstream", "https://api.anthropic.com/"]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    shown = lines(result.stdout)
    options = [f"collapse.{option.name}" for option in fields(CollapseOptions)]
    tables = {"collapse": options, "lanes": [f"lanes.{name}" for name in names()]}
    assert list(shown) == [row for key in KEYS for row in tables.get(key, [key])]
    assert shown["mode"] == ["paper", "config", "file", str(config)]
    assert shown["port"] == ["8001", "environment", "SKILLSTATE_PORT"]
    assert shown["upstream"] == ["https://api.anthropic.com", "command", "line", "--upstream"]
    assert shown["api_key"] == ["sk-…wxyz", "environment", "SKILLSTATE_API_KEY"]
    assert shown["host"] == ["127.0.0.1", "default"]
    assert KEY not in result.output


def test_the_source_column_is_aligned() -> None:
    result = CliRunner().invoke(cli, ["config"])
    rows = [line for line in result.stdout.splitlines() if not line.startswith("data_dir")]
    assert len({row.index("default") for row in rows}) == 1


def test_json_output(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["config", "--json", "--schema", "step,notes", "-v"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["schema"] == {"value": ["step", "notes"], "source": "command line --schema"}
    assert report["verbose"] == {"value": True, "source": "command line --verbose"}
    assert report["data_dir"]["value"] == str(tmp_path / ".local" / "share" / "skillstate")


def test_a_config_error_prints_to_stderr_and_exits_2() -> None:
    result = CliRunner().invoke(cli, ["config", "--json"], env={"SKILLSTATE_PORT": "abc"})
    assert result.exit_code == 2
    assert result.stdout == ""
    assert (
        result.stderr
        == "config error: port='abc' from environment SKILLSTATE_PORT: not an integer\n"
    )


def test_the_collapse_table_is_shown_option_by_option(tmp_path: Path) -> None:
    config = tmp_path / "skillstate.toml"
    config.write_text("[collapse]\nmin_turns = 40\n")
    result = CliRunner().invoke(cli, ["config", "--config", str(config)])
    assert result.exit_code == 0, result.output
    shown = lines(result.stdout)
    assert shown["collapse.min_turns"] == ["40", "config", "file", str(config)]
    assert shown["collapse.enabled"] == ["true", "default"]


def test_an_unknown_collapse_option_is_a_config_error(tmp_path: Path) -> None:
    env = {"SKILLSTATE_COLLAPSE": '{"keep_recent": 2}'}
    result = CliRunner().invoke(cli, ["config"], env=env)
    assert result.exit_code == 2
    assert "collapse option 'keep_recent' is unknown" in result.stderr
    assert "SKILLSTATE_COLLAPSE" in result.stderr
