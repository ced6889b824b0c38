"""Which login Claude Code will send (``integrations.claude.login``), in its own order of
precedence, and what ``integrate claude`` and ``doctor`` say of it (issue 27)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from integrate_support import COMMAND, GATEWAY, locations

from skillstate.cli.doctor.logins import check_claude_login
from skillstate.config import load_settings
from skillstate.integrations import Host, integration
from skillstate.integrations.claude import login
from skillstate.protocols.logins import Login

OAUTH = "sk-ant-oat01-abcdefghijklmnopqrstuvwxyz"


def _write(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


@pytest.mark.parametrize(
    ("env", "kind", "source"),
    [
        ({"ANTHROPIC_AUTH_TOKEN": OAUTH, "ANTHROPIC_API_KEY": "k"}, "subscription", "AUTH_TOKEN"),
        ({"ANTHROPIC_AUTH_TOKEN": "sk-proxy-key"}, "api-key", "ANTHROPIC_AUTH_TOKEN"),
        (
            {"ANTHROPIC_API_KEY": "sk-ant-api03-x", "CLAUDE_CODE_OAUTH_TOKEN": OAUTH},
            "api",
            "API_KEY",
        ),
        ({"CLAUDE_CODE_OAUTH_TOKEN": OAUTH}, "subscription", "CLAUDE_CODE_OAUTH_TOKEN"),
        ({"CLAUDE_CODE_OAUTH_TOKEN": ""}, "none", "Keychain"),
    ],
)
def test_the_environment_in_claude_code_s_order(
    tmp_path: Path, env: dict[str, str], kind: str, source: str
) -> None:
    found = login(locations(tmp_path, env=env))
    assert found.kind.value.startswith(kind.replace("subscription", "anthropic-subscription"))
    assert source in found.source


def test_the_settings_env_the_key_helper_and_the_credentials_file(tmp_path: Path) -> None:
    where = locations(tmp_path)
    settings = tmp_path / "home" / ".claude" / "settings.json"
    credentials = tmp_path / "home" / ".claude" / ".credentials.json"
    _write(credentials, {"claudeAiOauth": {"accessToken": OAUTH}})
    assert login(where).kind is Login.ANTHROPIC_SUBSCRIPTION
    assert ".credentials.json" in login(where).source
    _write(settings, {"apiKeyHelper": "/usr/local/bin/key"})
    assert (login(where).kind, login(where).source) == (
        Login.API_KEY,
        "apiKeyHelper in settings.json",
    )
    _write(settings, {"env": {"ANTHROPIC_API_KEY": "sk-ant-api03-y"}})
    assert login(where).source == "ANTHROPIC_API_KEY"
    credentials.write_text("{not json")
    settings.write_text("[]")
    assert login(where).kind is Login.NONE


def test_install_notes_name_the_login_and_for_a_subscription_what_it_costs(
    tmp_path: Path,
) -> None:
    env = {"CLAUDE_CODE_OAUTH_TOKEN": OAUTH}
    notes = integration(Host.CLAUDE, locations(tmp_path, env=env), GATEWAY, COMMAND).notes
    said = " ".join(notes)
    assert "anthropic-subscription from CLAUDE_CODE_OAUTH_TOKEN" in said
    assert "untouched" in said and "sonnet[1m]" in said
    assert OAUTH not in said
    keyed = {"ANTHROPIC_API_KEY": "sk-ant-api03-z"}
    notes = integration(Host.CLAUDE, locations(tmp_path, env=keyed), GATEWAY, COMMAND).notes
    assert not any("untouched" in note for note in notes)


@pytest.mark.parametrize(
    ("env", "cli", "said"),
    [
        ({"CLAUDE_CODE_OAUTH_TOKEN": OAUTH}, {}, "passed through untouched (subscription)"),
        (
            {"CLAUDE_CODE_OAUTH_TOKEN": OAUTH},
            {"subscription_rewrite": True},
            "rewritten (mode hybrid) because subscription_rewrite = true",
        ),
        ({"ANTHROPIC_API_KEY": "sk-ant-api03-z"}, {}, "forwarded, rewritten as mode hybrid says"),
        (
            {"ANTHROPIC_API_KEY": "sk-ant-api03-z"},
            {"api_key": "sk-gateway-0123456789"},
            "in its place",
        ),
        ({}, {}, "Claude Code will ask you to log in"),
    ],
)
def test_doctor_says_which_login_and_what_the_gateway_does_with_it(
    tmp_path: Path, env: dict[str, str], cli: dict[str, object], said: str
) -> None:
    settings = load_settings(
        cli={"upstream": "https://api.anthropic.com", "data_dir": str(tmp_path / "d"), **cli},
        environ={},
    )
    check = check_claude_login(settings, {"HOME": str(tmp_path), **env})
    assert check.name == "login claude" and check.ok is None
    assert said in check.detail
    assert OAUTH not in check.detail
