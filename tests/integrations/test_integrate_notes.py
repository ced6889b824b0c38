"""What install tells the user about the host's key and what can still override it."""

from __future__ import annotations

from pathlib import Path

from integrate_support import COMMAND, GATEWAY, locations

from skillstate.integrations import Host, integration


def test_claude_warns_of_a_shell_base_url_that_differs(tmp_path: Path) -> None:
    env = {"ANTHROPIC_BASE_URL": "https://elsewhere.example"}
    notes = integration(Host.CLAUDE, locations(tmp_path, env=env), GATEWAY, COMMAND).notes
    assert any("ANTHROPIC_BASE_URL" in note for note in notes)
    same = {"ANTHROPIC_BASE_URL": GATEWAY}
    notes = integration(Host.CLAUDE, locations(tmp_path, env=same), GATEWAY, COMMAND).notes
    assert not any("ANTHROPIC_BASE_URL" in note for note in notes)


def test_opencode_says_how_to_choose_the_model(tmp_path: Path) -> None:
    where = locations(tmp_path)
    assert any(
        "--model" in note for note in integration(Host.OPENCODE, where, GATEWAY, COMMAND).notes
    )
    named = integration(Host.OPENCODE, where, GATEWAY, COMMAND, ("gpt-5",)).notes
    assert any("skillstate/gpt-5" in note for note in named)


def test_codex_names_the_key_variable_and_project_trust(tmp_path: Path) -> None:
    user = integration(Host.CODEX, locations(tmp_path), GATEWAY, COMMAND).notes
    assert any("OPENAI_API_KEY" in note for note in user)
    project = integration(Host.CODEX, locations(tmp_path, project=tmp_path), GATEWAY, COMMAND)
    assert any("trusted" in note for note in project.notes)


def test_a_trailing_slash_on_the_gateway_is_dropped(tmp_path: Path) -> None:
    plan = integration(Host.CLAUDE, locations(tmp_path), GATEWAY + "/", COMMAND)
    assert "127.0.0.1:8789/" not in str(plan.edits[0])
