"""Which login Codex holds decides what ``integrate codex`` writes: a ChatGPT login in
``$CODEX_HOME/auth.json`` gets a provider with ``requires_openai_auth`` and no ``env_key`` (so
Codex sends that login to the gateway), an API key or none keeps ``env_key``. The output and
``doctor`` say which login it is, and never show a token."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from integrate_support import GATEWAY, record

from skillstate.cli.doctor.hosts import check_integrations
from skillstate.integrations import Host, Locations, install, integration, snippet
from skillstate.integrations.probes import doctor_probes

ACCESS = "eyJhbGciOiJub25lIn0.eyJzZWNyZXQiOiJhY2Nlc3MifQ.c2ln"
API_KEY = "sk-proj-secret-in-auth-json"
CHATGPT_AUTH = {
    "auth_mode": "chatgpt",
    "OPENAI_API_KEY": None,
    "tokens": {
        "id_token": "eyJhbGciOiJub25lIn0.eyJpZCI6MX0.c2ln",
        "access_token": ACCESS,
        "refresh_token": "rt-secret",
        "account_id": "acct-1",
    },
    "last_refresh": "2026-12-01T00:00:00Z",
}
KEY_AUTH = {"auth_mode": "apikey", "OPENAI_API_KEY": API_KEY}


def codex_home(tmp: Path, auth: object | None) -> dict[str, str]:
    """An environment whose CODEX_HOME holds ``auth`` as its auth.json (None: no file)."""
    home = tmp / "codex-home"
    home.mkdir(parents=True, exist_ok=True)
    if auth is not None:
        (home / "auth.json").write_text(json.dumps(auth))
    return {"CODEX_HOME": str(home), "HOME": str(tmp / "home"), "PATH": str(tmp / "no-bin")}


def provider(tmp: Path, env: dict[str, str]) -> dict[str, object]:
    plan = integration(Host.CODEX, Locations(env, tmp / "home"), GATEWAY, "skillstate")
    install(plan, record(tmp))
    data = tomllib.loads((Path(env["CODEX_HOME"]) / "config.toml").read_text())
    table = data["model_providers"]["skillstate"]
    assert isinstance(table, dict)
    return table


def test_a_chatgpt_login_is_kept_by_the_provider(tmp_path: Path) -> None:
    env = codex_home(tmp_path, CHATGPT_AUTH)
    assert provider(tmp_path, env) == {
        "name": "skillstate gateway",
        "base_url": GATEWAY + "/v1",
        "requires_openai_auth": True,
        "supports_websockets": True,
        "wire_api": "responses",
    }


@pytest.mark.parametrize("auth", [KEY_AUTH, None, "not json"], ids=["api-key", "none", "bad"])
def test_an_api_key_or_no_login_keeps_the_key_variable(auth: object, tmp_path: Path) -> None:
    env = codex_home(tmp_path, auth)
    table = provider(tmp_path, env)
    assert table["env_key"] == "OPENAI_API_KEY" and "requires_openai_auth" not in table
    assert table["supports_websockets"] is True


@pytest.mark.parametrize("auth", [CHATGPT_AUTH, KEY_AUTH], ids=["chatgpt", "api-key"])
def test_the_output_says_which_transport(auth: object, tmp_path: Path) -> None:
    """The WebSocket with either login (checked end to end with each:
    tests/e2e/test_codex_socket.py, tests/e2e/test_codex_chatgpt.py)."""
    env = codex_home(tmp_path, auth)
    plan = integration(Host.CODEX, Locations(env, tmp_path / "home"), GATEWAY, "skillstate")
    assert any("over a WebSocket" in note for note in plan.notes)
    assert "supports_websockets = true" in snippet(plan)


@pytest.mark.parametrize(
    ("auth", "said"),
    [(CHATGPT_AUTH, "logged in with ChatGPT"), (KEY_AUTH, "an API key in auth.json")],
)
def test_the_output_says_which_login_and_shows_no_token(
    auth: object, said: str, tmp_path: Path
) -> None:
    env = codex_home(tmp_path, auth)
    plan = integration(Host.CODEX, Locations(env, tmp_path / "home"), GATEWAY, "skillstate")
    shown = snippet(plan) + "\n".join(plan.notes)
    assert said in shown
    for secret in (ACCESS, API_KEY, "rt-secret", "acct-1"):
        assert secret not in shown


def test_doctor_says_codex_uses_its_chatgpt_login(tmp_path: Path) -> None:
    env = codex_home(tmp_path, CHATGPT_AUTH)
    plan = integration(Host.CODEX, Locations(env, tmp_path / "home"), GATEWAY, "skillstate")
    install(plan, record(tmp_path))
    probes = doctor_probes(GATEWAY, record(tmp_path).parent, env)
    state, drift = probes["codex"]()
    assert drift is None
    assert state == "installed; Codex logs in with ChatGPT: its requests go to the ChatGPT backend"
    (check,) = check_integrations({"codex": probes["codex"]})
    assert check.ok is True and "ChatGPT" in check.detail
    assert ACCESS not in state
