"""Keys the user had before us come back after an uninstall; a fragment keeps the user's text."""

from __future__ import annotations

import json
from pathlib import Path

from integrate_support import plan, record

from skillstate.integrations import Host, fragment, install, uninstall, verify


def test_a_user_value_under_our_key_is_put_back(tmp_path: Path) -> None:
    integration = plan(Host.CLAUDE, tmp_path)
    settings = integration.edits[0].path
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": "https://proxy.example"}}))
    install(integration, record(tmp_path))
    assert json.loads(settings.read_text())["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8789"
    (settings.parent / "other.json").write_text("{}")  # unrelated; not ours
    data = json.loads(settings.read_text()) | {"model": "opus"}
    settings.write_text(json.dumps(data))
    uninstall(integration, record(tmp_path))
    assert json.loads(settings.read_text()) == {
        "env": {"ANTHROPIC_BASE_URL": "https://proxy.example"},
        "model": "opus",
    }


def test_the_fragment_block_is_appended_and_removed(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    agents = project / "AGENTS.md"
    agents.write_text("# Rules\nBe brief.")
    integration = fragment(Host.CODEX, project)
    install(integration, record(tmp_path))
    text = agents.read_text()
    assert text.startswith("# Rules\nBe brief.\n\n<!-- >>> skillstate (managed) >>> -->\n")
    assert verify(integration) == []
    agents.write_text(text + "More rules.\n")
    uninstall(integration, record(tmp_path))
    assert agents.read_text() == "# Rules\nBe brief.\nMore rules.\n"
