"""``cli.shell_settings`` reads the shell lane's three settings as ``load_settings`` does: the
same values from the same sources, and the same problem for a bad one."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillstate.cli.shell_settings import SettingsProblems, ShellSettings, read_settings
from skillstate.config import ConfigError, load_settings

KEYS = ("data_dir", "archive_ttl_days", "archive_max_mb", "data_key_file")
DATA_KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="


def _both(
    env: dict[str, str], flags: dict[str, str | None]
) -> tuple[ShellSettings | list[str], ShellSettings | list[str]]:
    try:
        loaded = load_settings(
            cli={"data_dir": flags.get("data_dir")}, environ=env, config_path=flags.get("config")
        )
        key = None if loaded.data_key is None else loaded.data_key.get_secret_value()
        theirs: ShellSettings | list[str] = ShellSettings(
            *(getattr(loaded, name) for name in KEYS), data_key=key
        )
    except ConfigError as error:
        theirs = list(error.problems)
    try:
        ours: ShellSettings | list[str] = read_settings(
            data_dir=flags.get("data_dir"), config_path=flags.get("config"), environ=env
        )
    except SettingsProblems as error:
        ours = error.problems
    return ours, theirs


FILES = {
    "none": None,
    "relative": 'data_dir = "kept"\narchive_ttl_days = 3\narchive_max_mb = 10\n',
    "home": 'data_dir = "~/kept"\narchive_ttl_days = 0.5\n',
    "float_mb": "archive_max_mb = 1.5\n",
    "bool_mb": "archive_max_mb = true\n",
    "text_mb": 'archive_max_mb = "10"\n',
    "negative_days": "archive_ttl_days = -1\n",
    "text_days": 'archive_ttl_days = "a"\n',
    "number_dir": "data_dir = 5\n",
    "empty_dir": 'data_dir = ""\n',
    "not_toml": "archive_max_mb = \n",
    "key_file": 'data_key_file = "keys/data.key"\n',
    "number_key_file": "data_key_file = 5\n",
}
ENVS = {
    "none": {},
    "xdg": {"XDG_DATA_HOME": "/x/data"},
    "relative_xdg": {"XDG_DATA_HOME": "x/data"},
    "dir": {"SKILLSTATE_DATA_DIR": "here"},
    "tilde": {"SKILLSTATE_DATA_DIR": "~/there"},
    "numbers": {"SKILLSTATE_ARCHIVE_TTL_DAYS": "2.5", "SKILLSTATE_ARCHIVE_MAX_MB": "+7"},
    "bad_mb": {"SKILLSTATE_ARCHIVE_MAX_MB": "x"},
    "zero_mb": {"SKILLSTATE_ARCHIVE_MAX_MB": "0"},
    "float_mb": {"SKILLSTATE_ARCHIVE_MAX_MB": "1.5"},
    "empty_days": {"SKILLSTATE_ARCHIVE_TTL_DAYS": " "},
    "inf_days": {"SKILLSTATE_ARCHIVE_TTL_DAYS": "1e999"},
    "empty_dir": {"SKILLSTATE_DATA_DIR": ""},
    "key_file": {"SKILLSTATE_DATA_KEY_FILE": "~/data.key"},
    "data_key": {"SKILLSTATE_DATA_KEY": DATA_KEY},
}
FLAGS = {
    "none": {},
    "dir": {"data_dir": "flagged"},
    "missing_config": {"config": "nowhere.toml"},
}


@pytest.mark.parametrize("file", FILES)
@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("flags", FLAGS)
def test_each_source_reads_as_load_settings_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file: str, env: str, flags: str
) -> None:
    monkeypatch.chdir(tmp_path)
    environ = {"HOME": str(tmp_path / "home"), **ENVS[env]}
    text = FILES[file]
    if text is not None:
        folder = tmp_path / "conf"
        folder.mkdir()
        (folder / "config.toml").write_text(text)
        environ["SKILLSTATE_CONFIG"] = str(folder / "config.toml")
    ours, theirs = _both(environ, dict(FLAGS[flags]))
    assert ours == theirs


def test_the_default_file_is_read_when_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "HOME": str(tmp_path)}
    (tmp_path / "cfg" / "skillstate").mkdir(parents=True)
    (tmp_path / "cfg" / "skillstate" / "config.toml").write_text("archive_max_mb = 3\n")
    ours, theirs = _both(environ, {})
    assert ours == theirs
    assert isinstance(ours, ShellSettings) and ours.archive_max_mb == 3


def test_a_problem_with_another_key_does_not_stop_the_shell(tmp_path: Path) -> None:
    settings = read_settings(environ={"HOME": str(tmp_path), "SKILLSTATE_PORT": "x"})
    assert settings == ShellSettings(tmp_path / ".local" / "share" / "skillstate")
