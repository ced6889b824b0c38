"""Codex's config.toml: the provider selection before every table, the shapes the e2e test
points Codex with, and the files Codex cannot take a block in."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from integrate_support import plan, record, snapshot

from skillstate.integrations import Host, IntegrationError, install, uninstall


def config(tmp: Path) -> Path:
    path = tmp / "home" / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_the_provider_is_selected_at_top_level_and_speaks_responses(tmp_path: Path) -> None:
    path = config(tmp_path)
    path.write_text('[analytics]\nenabled = false\n\n[model_providers.mine]\nname = "x"\n')
    install(plan(Host.CODEX, tmp_path), record(tmp_path))
    data = tomllib.loads(path.read_text())
    assert data["model_provider"] == "skillstate"
    assert "model_provider" not in data["analytics"]
    assert data["model_providers"]["mine"] == {"name": "x"}
    assert data["model_providers"]["skillstate"] == {
        "name": "skillstate gateway",
        "base_url": "http://127.0.0.1:8789/v1",
        "env_key": "OPENAI_API_KEY",
        "supports_websockets": True,
        "wire_api": "responses",
    }
    assert data["mcp_servers"]["skillstate"] == {"command": "skillstate", "args": ["mcp"]}


@pytest.mark.parametrize(
    "user",
    [
        'model_provider = "openai"\n',
        '[model_providers.skillstate]\nname = "old"\n',
        '[mcp_servers.skillstate]\ncommand = "x"\n',
    ],
)
def test_a_user_setting_of_the_same_keys_is_refused(user: str, tmp_path: Path) -> None:
    config(tmp_path).write_text(user)
    before = snapshot(tmp_path)
    with pytest.raises(IntegrationError, match="outside skillstate's block"):
        install(plan(Host.CODEX, tmp_path), record(tmp_path))
    assert snapshot(tmp_path) == before


def test_a_file_that_cannot_take_the_tables_is_rolled_back(tmp_path: Path) -> None:
    """An inline ``model_providers`` table cannot be extended by a ``[model_providers.x]``
    header: the check after the write catches it, and the file is put back."""
    config(tmp_path).write_text('model_providers = { mine = { name = "x" } }\n')
    before = snapshot(tmp_path)
    with pytest.raises(IntegrationError, match="not be valid TOML"):
        install(plan(Host.CODEX, tmp_path), record(tmp_path))
    assert snapshot(tmp_path) == before


def test_a_file_without_a_final_newline_survives_a_round_trip(tmp_path: Path) -> None:
    path = config(tmp_path)
    path.write_text('model = "gpt-5"')
    install(plan(Host.CODEX, tmp_path), record(tmp_path))
    assert tomllib.loads(path.read_text())["model"] == "gpt-5"
    uninstall(plan(Host.CODEX, tmp_path), record(tmp_path))
    assert path.read_bytes() == b'model = "gpt-5"'
