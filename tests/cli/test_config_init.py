"""skillstate config --init: a commented file with every key at its default, never overwritten."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillstate.cli.main import cli
from skillstate.config import KEYS, describe_json, load_settings
from skillstate.config.template import NOTES


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [name for name in os.environ if name.startswith("SKILLSTATE_")]:
        monkeypatch.delenv(name)
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def values(path: Path | None, home: Path) -> dict[str, object]:
    settings = load_settings(environ={"HOME": str(home)}, config_path=path and str(path))
    return {key: shown["value"] for key, shown in describe_json(settings).items()}


def test_writes_every_key_at_its_default(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "skillstate.toml"
    result = CliRunner().invoke(cli, ["config", "--init", str(path)])
    assert result.exit_code == 0, result.output
    assert str(path) in result.stdout
    text = path.read_text()
    document = tomllib.loads(text)
    assert set(document) <= set(KEYS)
    assert values(path, tmp_path) == values(None, tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_every_key_is_in_the_file_with_its_note(tmp_path: Path) -> None:
    path = tmp_path / "skillstate.toml"
    CliRunner().invoke(cli, ["config", "--init", str(path)])
    text = path.read_text()
    assert set(NOTES) == set(KEYS)
    for key in KEYS:
        assert NOTES[key] in text
        assert f"{key} = " in text or f"[{key}" in text or f"[[{key}]]" in text, key


def test_secrets_stay_out_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "skillstate.toml"
    env = {"SKILLSTATE_API_KEY": "sk-proj-0123456789abcdefwxyz", "SKILLSTATE_PORT": "9001"}
    result = CliRunner().invoke(cli, ["config", "--init", str(path)], env=env)
    assert result.exit_code == 0, result.output
    document = tomllib.loads(path.read_text())
    assert "api_key" not in document and "auth_token" not in document
    assert document["port"] == 8789  # the default, not what the environment says


def test_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "skillstate.toml"
    path.write_text("port = 9000\n")
    result = CliRunner().invoke(cli, ["config", "--init", str(path)])
    assert result.exit_code == 1
    assert f"{path} exists; not overwritten" in result.stderr
    assert path.read_text() == "port = 9000\n"


def test_the_default_path_is_the_xdg_config_home(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["config", "--init"])
    assert result.exit_code == 0, result.output
    path = tmp_path / ".config" / "skillstate" / "config.toml"
    assert f"wrote {path}" in result.stdout
    assert values(path, tmp_path) == values(None, tmp_path)


def test_the_config_flag_and_variable_name_the_path(tmp_path: Path) -> None:
    flagged = tmp_path / "flag.toml"
    result = CliRunner().invoke(cli, ["config", "--config", str(flagged), "--init"])
    assert result.exit_code == 0, result.output
    assert flagged.exists()
    named = tmp_path / "named.toml"
    env = {"SKILLSTATE_CONFIG": str(named)}
    result = CliRunner().invoke(cli, ["config", "--init"], env=env)
    assert result.exit_code == 0, result.output
    assert named.exists()


def test_the_file_at_the_default_path_is_read_without_a_flag(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["config", "--init"])
    assert "skillstate reads it from there" in result.stdout
    path = tmp_path / ".config" / "skillstate" / "config.toml"
    path.write_text("[lanes.style]\nenabled = true\n")
    settings = load_settings(environ={"HOME": str(tmp_path)})
    assert settings.lanes.enabled("style")
    shown = describe_json(settings)["lanes"]
    assert shown["source"] == f"config file {path}"
    xdg = tmp_path / "xdg"
    assert not load_settings(environ={"XDG_CONFIG_HOME": str(xdg)}).lanes.enabled("style")
    assert not load_settings(environ={}).lanes.enabled("style")  # no home named: no file
