"""skillstate prices: the price catalog as a table, or as JSON with --json; config included."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillstate.cli.main import cli
from skillstate.economics.catalog_age import catalog_age
from skillstate.economics.prices import builtin_catalog

CONFIG = """
[prices."gpt-4o"]
input = 3
cached_input = 1.5

[prices."my-model"]
input = 0.2
output = 0.8
"""


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [name for name in os.environ if name.startswith("SKILLSTATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "skillstate.toml"
    path.write_text(CONFIG)
    return path


def rows(stdout: str) -> dict[str, list[str]]:
    """The table's rows by model, each the cells after the model's name."""
    names = set(builtin_catalog().prices) | {"my-model"}
    return {
        cells[0]: cells[1:]
        for cells in (line.split() for line in stdout.splitlines())
        if cells and cells[0] in names
    }


def test_the_table_lists_every_model_with_the_date_and_the_sources() -> None:
    result = CliRunner().invoke(cli, ["prices"])
    assert result.exit_code == 0, result.output
    catalog = builtin_catalog()
    assert f"USD per million tokens, list prices as of {catalog.as_of.isoformat()}" in result.stdout
    shown = rows(result.stdout)
    assert list(shown) == list(catalog.prices)
    assert shown["gpt-4o"] == ["2.50", "1.25", "-", "-", "10.00"]
    assert shown["gpt-4o-mini"] == ["0.15", "0.075", "-", "-", "0.60"]
    assert shown["claude-sonnet-4-5"] == ["3.00", "0.30", "3.75", "6.00", "15.00"]
    for provider, url in catalog.sources.items():
        assert f"{provider}: {url}" in result.stdout
    assert "override" not in result.stdout


def test_the_table_marks_what_the_config_changed_or_added(config: Path) -> None:
    result = CliRunner().invoke(cli, ["prices", "--config", str(config)])
    assert result.exit_code == 0, result.output
    shown = rows(result.stdout)
    assert shown["gpt-4o"] == ["3.00", "1.50", "-", "-", "10.00", "override"]
    assert shown["my-model"] == ["0.20", "0.20", "-", "-", "0.80", "added"]
    assert shown["gpt-4.1"] == ["2.00", "0.50", "-", "-", "8.00"]
    assert list(shown)[-1] == "my-model"
    assert f"override, added: from config file {config}" in result.stdout


def test_json_output(config: Path) -> None:
    result = CliRunner().invoke(cli, ["prices", "--json", "--config", str(config)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert list(report) == ["as_of", "currency", "unit", "models", "catalog"]
    assert report["as_of"] == builtin_catalog().as_of.isoformat()
    age = catalog_age(builtin_catalog().as_of, datetime.date.today())
    assert report["catalog"] == age.as_json()
    assert (report["currency"], report["unit"]) == ("USD", "per million tokens")
    models = {entry["model"]: entry for entry in report["models"]}
    assert list(models) == [*builtin_catalog().prices, "my-model"]
    keys = ["model", "input", "cached_input", "cache_write_5m", "cache_write_1h", "output"]
    assert all(list(entry) == [*keys, "source", "override"] for entry in report["models"])
    openai = builtin_catalog().sources["openai"]
    assert models["gpt-4o"] == {
        "model": "gpt-4o",
        "input": 3,
        "cached_input": 1.5,
        "cache_write_5m": None,
        "cache_write_1h": None,
        "output": 10,
        "source": openai,
        "override": True,
    }
    assert models["my-model"]["source"] == f"config file {config}"
    assert models["my-model"]["override"] is True
    assert models["claude-haiku-4-5"] == {
        "model": "claude-haiku-4-5",
        "input": 1,
        "cached_input": 0.1,
        "cache_write_5m": 1.25,
        "cache_write_1h": 2,
        "output": 5,
        "source": builtin_catalog().sources["anthropic"],
        "override": False,
    }


def test_json_honours_the_environment() -> None:
    env = {"SKILLSTATE_PRICES": '{"o3": {"output": 6.5}}'}
    result = CliRunner().invoke(cli, ["prices", "--json"], env=env)
    assert result.exit_code == 0, result.output
    (o3,) = [entry for entry in json.loads(result.stdout)["models"] if entry["model"] == "o3"]
    assert (o3["input"], o3["output"], o3["override"]) == (2, 6.5, True)


def test_a_bad_table_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "s.toml"
    config.write_text('[prices."gpt-4o"]\ninput = -2\n')
    result = CliRunner().invoke(cli, ["prices", "--config", str(config)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"config error: prices.'gpt-4o'.input must not be negative, not -2 "
        f"(from config file {config})\n"
    )


def test_a_catalog_older_than_six_months_is_named_stale_with_a_warning() -> None:
    """Issue 26: the table says so below the sources (the day is today's: the catalog's own
    date decides, as ``catalog_age`` does for any day)."""
    result = CliRunner().invoke(cli, ["prices"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    age = catalog_age(builtin_catalog().as_of, datetime.date.today())
    lines = [line for line in result.stdout.splitlines() if line.startswith("warning: ")]
    if not age.stale:
        assert lines == []
        return
    (line,) = lines
    assert line == f"warning: {age.warning()}"
    assert f"of {age.date.isoformat()}, {age.age_days} days old" in line
    assert '[prices."MODEL"]' in line


def test_help_explains_the_rates_the_date_and_overrides() -> None:
    result = CliRunner().invoke(cli, ["prices", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "USD per million tokens" in text
    assert "list prices as known on the catalog's date" in text
    assert '[prices."model-name"]' in text
    assert "counted as unpriced, never as free" in text
    assert "--json" in text
    listed = CliRunner().invoke(cli, ["--help"]).stdout.split("Commands:")[1].split()
    assert "prices" in listed


def test_a_narrow_pipe_cuts_nothing(tmp_path: Path) -> None:
    config = tmp_path / "s.toml"
    name = "a-model-with-a-name-longer-than-any-column-would-allow"
    config.write_text(f'[prices."{name}"]\ninput = 0.123456\noutput = 1\n')
    args = ["prices", "--config", str(config)]
    result = CliRunner().invoke(cli, args, env={"COLUMNS": "40"})
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.stdout.splitlines() if name in line]
    assert line.split() == [name, "0.123456", "0.123456", "-", "-", "1.00", "added"]
