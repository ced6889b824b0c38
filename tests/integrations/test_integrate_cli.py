"""``skillstate integrate`` through click, with HOME and the data directory under tmp."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from integrate_support import snapshot

from skillstate.cli.main import cli


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def run(tmp: Path, *args: str, **env: str) -> tuple[int, str]:
    environ: dict[str, str | None] = {
        "HOME": str(tmp / "home"),
        "XDG_DATA_HOME": str(tmp / "data"),
        "PATH": "",
        "CODEX_HOME": None,
        "XDG_CONFIG_HOME": None,
        "OPENCODE_CONFIG": None,
        "CLAUDE_CONFIG_DIR": None,
        "ANTHROPIC_BASE_URL": None,
        **env,
    }
    result = CliRunner().invoke(cli, ["integrate", *args], env=environ)
    return result.exit_code, result.output


def test_help_explains_each_mode(tmp_path: Path) -> None:
    code, out = run(tmp_path, "--help")
    assert code == 0
    for word in ("--print", "--install", "--uninstall", "--verify", "--project", "--fragment"):
        assert word in out


def test_print_is_the_default_and_changes_nothing(tmp_path: Path) -> None:
    code, out = run(tmp_path, "codex")
    assert code == 0 and 'wire_api = "responses"' in out
    assert snapshot(tmp_path) == {}


def test_install_verify_uninstall(tmp_path: Path, home: Path) -> None:
    assert run(tmp_path, "claude", "--verify")[0] == 1
    code, out = run(tmp_path, "claude", "--install")
    assert code == 0 and "installed in" in out
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings == {"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8789"}}
    assert run(tmp_path, "claude", "--install")[1].startswith("already installed")
    assert run(tmp_path, "claude", "--verify") == (0, "claude: installed and up to date\n")
    code, out = run(tmp_path, "claude", "--verify", "--gateway", "http://127.0.0.1:9000")
    assert code == 1 and "ANTHROPIC_BASE_URL" in out
    assert run(tmp_path, "claude", "--uninstall")[0] == 0
    assert snapshot(home) == {}


def test_the_gateway_comes_from_the_settings(tmp_path: Path, home: Path) -> None:
    code, _ = run(tmp_path, "codex", "--install", SKILLSTATE_PORT="9123")
    assert code == 0
    config = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert config["model_providers"]["skillstate"]["base_url"] == "http://127.0.0.1:9123/v1"


def test_codex_home_is_honoured(tmp_path: Path) -> None:
    code, _ = run(tmp_path, "codex", "--install", CODEX_HOME=str(tmp_path / "cx"))
    assert code == 0 and (tmp_path / "cx" / "config.toml").is_file()


def test_invalid_json_is_a_clear_error(tmp_path: Path, home: Path) -> None:
    path = home / ".config" / "opencode" / "opencode.json"
    path.parent.mkdir(parents=True)
    path.write_text("{// a comment\n}")
    code, out = run(tmp_path, "opencode", "--install")
    assert code == 1 and "not valid JSON" in out and "nothing was changed" in out
    assert path.read_text() == "{// a comment\n}"


def test_the_fragment_prints_and_goes_only_into_a_project(tmp_path: Path, home: Path) -> None:
    code, out = run(tmp_path, "claude", "--fragment")
    assert code == 0 and "Σ" in out and "recall" in out
    code, out = run(tmp_path, "claude", "--fragment", "--install")
    assert code == 2 and "--project" in out
    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_text("# My rules\n")
    assert run(tmp_path, "claude", "--fragment", "--install", "--project", str(project))[0] == 0
    text = (project / "CLAUDE.md").read_text()
    assert text.startswith("# My rules\n") and "recall" in text
    assert run(tmp_path, "claude", "--fragment", "--verify", "--project", str(project))[0] == 0
    assert run(tmp_path, "claude", "--fragment", "--uninstall", "--project", str(project))[0] == 0
    assert (project / "CLAUDE.md").read_text() == "# My rules\n"
    assert not home.exists()


def test_codex_and_opencode_fragments_go_into_agents_md(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    for host in ("codex", "opencode"):
        assert run(tmp_path, host, "--fragment", "--install", "--project", str(project))[0] == 0
    assert sorted(path.name for path in project.iterdir()) == ["AGENTS.md"]
    assert (project / "AGENTS.md").read_text().count(">>> skillstate") == 1


def test_one_mode_at_a_time(tmp_path: Path) -> None:
    code, out = run(tmp_path, "codex", "--install", "--verify")
    assert code == 2 and "choose one mode" in out
    assert snapshot(tmp_path) == {}
