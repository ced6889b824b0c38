"""Upstreams: the shortcut, the list of tables, their keys from the environment, conflicts."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import skillstate.config
from skillstate.config import ConfigError, load_settings
from skillstate.conversation.model import Profile, Wire

KEY = "sk-proj-0123456789abcdefwxyz"

TABLES = """
[[upstreams]]
name = "openai"
base_url = "https://api.openai.com/v1/"
api_key_env = "OPENAI_KEY"
models = ["gpt-*", "o?"]
headers = { "OpenAI-Organization" = "org-1" }

[[upstreams]]
name = "anthropic"
base_url = "https://api.anthropic.com"
wire = "anthropic-messages"
"""


def config_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "skillstate.toml"
    path.write_text(text)
    return str(path)


def problems(**kwargs: object) -> tuple[str, ...]:
    kwargs.setdefault("environ", {})
    with pytest.raises(ConfigError) as caught:
        load_settings(**kwargs)  # type: ignore[arg-type]
    return caught.value.problems


def test_the_shortcut_resolves_to_one_upstream_named_default() -> None:
    environ = {"SKILLSTATE_API_KEY": KEY, "SKILLSTATE_UPSTREAM_WIRE": "openai-responses"}
    settings = load_settings(cli={"upstream": "https://api.openai.com/v1"}, environ=environ)
    (upstream,) = settings.resolved_upstreams()
    assert (upstream.name, upstream.base_url, upstream.models) == (
        "default",
        "https://api.openai.com",
        ("*",),
    )
    assert upstream.wire == "openai-responses"
    assert upstream.forced_wire is Wire.RESPONSES
    assert upstream.api_key is not None
    assert upstream.api_key.get_secret_value() == KEY


def test_tables_resolve_in_order_with_keys_from_the_named_variable(tmp_path: Path) -> None:
    settings = load_settings(environ={"OPENAI_KEY": KEY}, config_path=config_file(tmp_path, TABLES))
    openai, anthropic = settings.resolved_upstreams()
    assert openai.base_url == "https://api.openai.com"
    assert openai.api_key is not None
    assert openai.api_key.get_secret_value() == KEY
    assert openai.headers == {"OpenAI-Organization": "org-1"}
    assert openai.forced_wire is None
    assert (anthropic.api_key, anthropic.forced_wire) == (None, Wire.MESSAGES)
    assert anthropic.models == ("*",)


def test_models_are_case_sensitive_globs(tmp_path: Path) -> None:
    settings = load_settings(environ={"OPENAI_KEY": KEY}, config_path=config_file(tmp_path, TABLES))
    openai = settings.upstreams[0]
    assert openai.matches("gpt-4.1")
    assert openai.matches("o3")
    assert not openai.matches("GPT-4.1")
    assert not openai.matches("o3-mini")


def test_the_key_never_appears_in_the_settings_repr(tmp_path: Path) -> None:
    settings = load_settings(environ={"OPENAI_KEY": KEY}, config_path=config_file(tmp_path, TABLES))
    assert KEY not in repr(settings)
    assert KEY not in settings.model_dump_json()


def test_a_named_variable_that_is_not_set_is_an_error(tmp_path: Path) -> None:
    config = config_file(tmp_path, TABLES)
    assert problems(config_path=config) == (
        f"upstreams[0].api_key_env='OPENAI_KEY' from config file {config}: "
        "environment variable OPENAI_KEY is not set",
    )
    found = problems(config_path=config, environ={"OPENAI_KEY": "sk bad key"})
    assert found == (
        f"upstreams[0].api_key_env='OPENAI_KEY' from config file {config}: "
        "environment variable OPENAI_KEY contains whitespace or control characters",
    )


def test_a_key_written_into_a_table_is_refused(tmp_path: Path) -> None:
    config = config_file(
        tmp_path, f'[[upstreams]]\nname = "a"\nbase_url = "http://x"\napi_key = "{KEY}"\n'
    )
    (problem,) = problems(config_path=config)
    assert problem.startswith(
        f"'upstreams[0].api_key' is not a known key (from config file {config})"
    )
    assert "api_key_env" in problem
    assert KEY not in problem


def test_a_skillstate_variable_named_by_api_key_env_is_not_unknown(tmp_path: Path) -> None:
    text = '[[upstreams]]\nname = "a"\nbase_url = "http://x"\napi_key_env = "SKILLSTATE_A_KEY"\n'
    settings = load_settings(
        environ={"SKILLSTATE_A_KEY": KEY}, config_path=config_file(tmp_path, text)
    )
    assert settings.upstreams[0].api_key is not None


def test_an_unknown_table_key_is_named_with_its_place(tmp_path: Path) -> None:
    config = config_file(tmp_path, '[[upstreams]]\nname = "a"\nbase_url = "http://x"\nmodls = []\n')
    assert problems(config_path=config) == (
        f"'upstreams[0].modls' is not a known key (from config file {config}); "
        "did you mean 'upstreams[0].models'?",
    )


def test_table_values_are_checked_and_named(tmp_path: Path) -> None:
    text = """
[[upstreams]]
name = "o k"
base_url = "ftp://x"
models = []
[[upstreams]]
base_url = "http://x"
wire = "grpc"
"""
    config = config_file(tmp_path, text)
    source = f"config file {config}"
    assert problems(config_path=config) == (
        f"upstreams[0].name='o k' from {source}: must be 1 to 64 letters, digits, '_', '.' or "
        "'-', starting alphanumeric",
        f"upstreams[0].base_url='ftp://x' from {source}: not an http:// or https:// URL",
        f"upstreams[0].models=[] from {source}: must hold at least one pattern "
        "(use '*' for every model)",
        f"upstreams[1].name is required (from {source})",
        f"upstreams[1].wire='grpc' from {source}: must be 'auto', 'openai-chat', "
        "'openai-responses' or 'anthropic-messages'",
    )


def test_header_values_and_url_credentials_are_not_shown(tmp_path: Path) -> None:
    text = """
[[upstreams]]
name = "a"
base_url = "https://user:hunter2@example.com"
headers = { "X-Token" = "tok\\nen" }
"""
    config = config_file(tmp_path, text)
    found = problems(config_path=config)
    assert found == (
        f"upstreams[0].base_url='https://***@example.com' from config file {config}: "
        "must not hold credentials; set the API key separately",
        f"upstreams[0].headers=(hidden) from config file {config}: "
        "header 'X-Token' has a line break or NUL in its value",
    )


def test_duplicate_names_are_an_error(tmp_path: Path) -> None:
    text = '[[upstreams]]\nname = "a"\nbase_url = "http://x"\n' * 2
    (problem,) = problems(config_path=config_file(tmp_path, text))
    assert problem.endswith("upstream name 'a' is used twice")


def test_upstream_and_upstreams_together_name_both_sources(tmp_path: Path) -> None:
    config = config_file(tmp_path, TABLES)
    found = problems(
        cli={"upstream": "https://api.openai.com"},
        environ={"OPENAI_KEY": KEY},
        config_path=config,
    )
    assert found == (
        f"upstream (from command line --upstream) and upstreams (from config file {config}): "
        "cannot both be set; upstream is the one-provider shortcut of upstreams",
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SKILLSTATE_API_KEY", KEY),
        ("SKILLSTATE_UPSTREAM_WIRE", "openai-chat"),
        ("SKILLSTATE_UPSTREAM_PROFILE", "compatible"),
    ],
)
def test_shortcut_keys_beside_upstreams_are_an_error(
    tmp_path: Path, variable: str, value: str
) -> None:
    config = config_file(tmp_path, TABLES)
    (problem,) = problems(environ={"OPENAI_KEY": KEY, variable: value}, config_path=config)
    key = variable.removeprefix("SKILLSTATE_").lower()
    assert problem.startswith(
        f"{key} (from environment {variable}) and upstreams (from config file {config}): "
        f"{key} applies only to the upstream shortcut"
    )
    assert KEY not in problem


def test_a_bad_api_key_is_reported_without_its_value() -> None:
    (problem,) = problems(environ={"SKILLSTATE_API_KEY": "sk-secret value"})
    assert problem == (
        "api_key=(secret) from environment SKILLSTATE_API_KEY: "
        "contains whitespace or control characters"
    )


def test_the_documented_config_file_loads(tmp_path: Path) -> None:
    doc = skillstate.config.__doc__ or ""
    example = textwrap.dedent(doc.split("A config file::")[1].split("\nOr, for one")[0])
    environ = {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}
    settings = load_settings(environ=environ, config_path=config_file(tmp_path, example))
    assert [upstream.name for upstream in settings.resolved_upstreams()] == ["openai", "anthropic"]
    assert settings.state_schema == ("step", "notes", "findings")


PROFILES = """
[[upstreams]]
name = "openai"
base_url = "https://api.openai.com/v1"

[[upstreams]]
name = "local"
base_url = "http://127.0.0.1:8080/v1"
wire = "openai-chat"

[[upstreams]]
name = "proxy"
base_url = "https://llm.example.com/v1"
profile = "openai"

[[upstreams]]
name = "patient"
base_url = "http://127.0.0.1:8000"
retry_first_byte_timeout = true
"""


def test_each_table_has_a_profile_detected_unless_it_says(tmp_path: Path) -> None:
    settings = load_settings(environ={}, config_path=config_file(tmp_path, PROFILES))
    found = {
        up.name: (up.profile, up.resolved_profile, up.retries_first_byte_timeout)
        for up in settings.resolved_upstreams()
    }
    assert found == {
        "openai": ("auto", Profile.OFFICIAL, True),
        "local": ("auto", Profile.COMPATIBLE, False),
        "proxy": ("openai", Profile.OFFICIAL, True),
        "patient": ("auto", Profile.COMPATIBLE, True),
    }


def test_the_gateway_gives_each_upstream_its_profile(tmp_path: Path) -> None:
    from skillstate.gateway import build_context

    settings = load_settings(environ={}, config_path=config_file(tmp_path, PROFILES))
    built = build_context(settings).router.upstreams
    assert [(up.profile, up.retry_first_byte_timeout) for up in built] == [
        (Profile.OFFICIAL, True),
        (Profile.COMPATIBLE, False),
        (Profile.OFFICIAL, True),
        (Profile.COMPATIBLE, True),
    ]


def test_the_shortcut_takes_its_profile_from_upstream_profile() -> None:
    local = {"upstream": "http://localhost:11434/v1"}
    (detected,) = load_settings(cli=local, environ={}).resolved_upstreams()
    assert (detected.profile, detected.resolved_profile) == ("auto", Profile.COMPATIBLE)
    environ = {"SKILLSTATE_UPSTREAM_PROFILE": "openai"}
    (declared,) = load_settings(cli=local, environ=environ).resolved_upstreams()
    assert declared.resolved_profile is Profile.OFFICIAL
    assert declared.retries_first_byte_timeout is True


def test_profile_values_are_checked_and_named(tmp_path: Path) -> None:
    text = (
        '[[upstreams]]\nname = "a"\nbase_url = "http://x"\nprofile = "llama"\n'
        'retry_first_byte_timeout = "no"\n'
    )
    config = config_file(tmp_path, text)
    source = f"config file {config}"
    assert problems(config_path=config) == (
        f"upstreams[0].profile='llama' from {source}: must be 'auto', 'openai' or 'compatible'",
        f"upstreams[0].retry_first_byte_timeout='no' from {source}: not a boolean",
    )
    (problem,) = problems(cli={"upstream_profile": "vllm"})
    assert problem == (
        "upstream_profile='vllm' from command line --upstream-profile: "
        "must be 'auto', 'openai' or 'compatible'"
    )


def test_a_tenants_provider_keys_come_from_the_variables_it_names(tmp_path: Path) -> None:
    environ = {"ALICE_KEY": "sk-alice-0123456789", "ALICE_ANTHROPIC": "sk-ant-alice-0123456"}
    entries = "alice=ALICE_KEY,alice@anthropic=ALICE_ANTHROPIC"
    settings = load_settings(
        config_path=config_file(tmp_path, TABLES),
        environ={**environ, "OPENAI_KEY": KEY, "SKILLSTATE_TENANT_API_KEYS": entries},
    )
    assert settings.tenant_key("alice", "openai") == "sk-alice-0123456789"
    assert settings.tenant_key("alice", "anthropic") == "sk-ant-alice-0123456"
    assert settings.tenant_key("bob", "openai") is None
    assert "sk-alice" not in settings.model_dump_json()  # the names are settings, not the keys


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("alice", "is not TENANT=VAR"),
        ("Alice=ALICE_KEY", "is not TENANT=VAR"),
        ("alice@=ALICE_KEY", "is not TENANT=VAR"),
        ("alice=UNSET_VAR", "environment variable UNSET_VAR is not set"),
        ("alice@nowhere=ALICE_KEY", "no upstream is named 'nowhere'"),
    ],
)
def test_a_tenants_provider_key_that_cannot_be_read_is_a_clear_error(
    tmp_path: Path, entry: str, said: str
) -> None:
    environ = {"ALICE_KEY": "sk-alice-0123456789", "OPENAI_KEY": KEY}
    found = problems(
        config_path=config_file(tmp_path, TABLES),
        environ={**environ, "SKILLSTATE_TENANT_API_KEYS": entry},
    )
    assert any(said in problem for problem in found), found
