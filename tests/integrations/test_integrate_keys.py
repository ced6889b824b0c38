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


def test_a_stale_record_does_not_undo_the_users_later_work(tmp_path: Path) -> None:
    """Install, the user takes our block out by hand and writes their own, install again:
    uninstall must keep their work, not go back to the file of the first install."""
    integration = plan(Host.CODEX, tmp_path)
    path = integration.edits[0].path
    path.parent.mkdir(parents=True)
    path.write_text('model = "a"\n')
    install(integration, record(tmp_path))
    path.write_text('model = "b"\n')
    install(integration, record(tmp_path))
    uninstall(integration, record(tmp_path))
    assert path.read_text() == 'model = "b"\n'


def test_without_a_record_ours_are_not_taken_for_the_users(tmp_path: Path) -> None:
    integration = plan(Host.OPENCODE, tmp_path)
    path = integration.edits[0].path
    install(integration, record(tmp_path))
    record(tmp_path).unlink()
    assert install(integration, record(tmp_path)) == []
    uninstall(integration, record(tmp_path))
    assert not path.exists() or "skillstate" not in path.read_text()
