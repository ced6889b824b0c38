"""load_settings: the precedence of sources, the parsing of text, and where each value came from."""

from __future__ import annotations

import os
from pathlib import Path
from typing import get_args

import pydantic
import pytest

import skillstate.config
from skillstate.config import (
    KEYS,
    ConfigError,
    Settings,
    UpstreamWire,
    default_data_dir,
    load_settings,
)
from skillstate.conversation.model import Wire


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def problems(**kwargs: object) -> tuple[str, ...]:
    kwargs.setdefault("environ", {})
    with pytest.raises(ConfigError) as caught:
        load_settings(**kwargs)  # type: ignore[arg-type]
    return caught.value.problems


def test_public_surface() -> None:
    assert sorted(skillstate.config.__all__) == sorted(
        [
            "KEYS",
            "ConfigError",
            "Mode",
            "Settings",
            "UpstreamSettings",
            "UpstreamWire",
            "default_data_dir",
            "describe",
            "describe_json",
            "load_settings",
            "mask_secret",
        ]
    )


def test_the_wire_choices_are_auto_and_every_wire() -> None:
    assert set(get_args(UpstreamWire)) == {"auto", *(wire.value for wire in Wire)}


def test_nothing_set_gives_the_field_defaults_from_source_default(tmp_path: Path) -> None:
    settings = load_settings(environ={"HOME": str(tmp_path)})
    assert set(settings.sources) == set(KEYS)
    assert set(settings.sources.values()) == {"default"}
    for name, field in Settings.model_fields.items():
        if name == "data_dir":
            continue
        expected = field.get_default(call_default_factory=True)
        assert getattr(settings, name) == expected, name
    assert settings.data_dir == tmp_path / ".local" / "share" / "skillstate"
    assert settings.resolved_upstreams() == []


def test_data_dir_default_follows_xdg_data_home_when_absolute(tmp_path: Path) -> None:
    assert default_data_dir({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "skillstate"
    relative = default_data_dir({"XDG_DATA_HOME": "rel", "HOME": str(tmp_path)})
    assert relative == tmp_path / ".local" / "share" / "skillstate"


def test_file_then_environment_then_command_line(tmp_path: Path) -> None:
    config = write(tmp_path / "s.toml", 'port = 1001\nhost = "0.0.0.0"\nmode = "paper"\n')
    environ = {"SKILLSTATE_PORT": "1002", "SKILLSTATE_HOST": "::1"}
    settings = load_settings(
        cli={"port": "1003", "mode": None}, environ=environ, config_path=config
    )
    assert (settings.port, settings.host, settings.mode) == (1003, "::1", "paper")
    assert settings.sources["port"] == "command line --port"
    assert settings.sources["host"] == "environment SKILLSTATE_HOST"
    assert settings.sources["mode"] == f"config file {config}"
    assert settings.sources["verbose"] == "default"


def test_config_file_comes_from_the_environment_unless_a_path_is_given(tmp_path: Path) -> None:
    from_env = write(tmp_path / "env.toml", "port = 2001\n")
    given = write(tmp_path / "given.toml", "port = 2002\n")
    environ = {"SKILLSTATE_CONFIG": from_env}
    assert load_settings(environ=environ).port == 2001
    assert load_settings(environ=environ, config_path=given).port == 2002


def test_environ_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("SKILLSTATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SKILLSTATE_PORT", "4321")
    settings = load_settings()
    assert settings.port == 4321
    assert settings.sources["port"] == "environment SKILLSTATE_PORT"


@pytest.mark.parametrize(
    ("variable", "text", "attribute", "expected"),
    [
        ("SKILLSTATE_PORT", "8080", "port", 8080),
        ("SKILLSTATE_MAX_BODY_BYTES", "1024", "max_body_bytes", 1024),
        ("SKILLSTATE_MAX_MESSAGES", "50", "max_messages", 50),
        ("SKILLSTATE_MAX_PARTS", "70", "max_parts", 70),
        ("SKILLSTATE_MAX_HEADER_LINE_BYTES", "4096", "max_header_line_bytes", 4096),
        ("SKILLSTATE_MAX_HEADERS", "64", "max_headers", 64),
        ("SKILLSTATE_UPSTREAM_TIMEOUT", "2.5", "upstream_timeout", 2.5),
        ("SKILLSTATE_CONNECT_TIMEOUT", "3", "connect_timeout", 3.0),
        (
            "SKILLSTATE_SCHEMA",
            "step, notes,findings",
            "state_schema",
            ("step", "notes", "findings"),
        ),
        (
            "SKILLSTATE_INITIAL_STATE",
            '{"step": 1, "n": [1]}',
            "initial_state",
            {"step": 1, "n": [1]},
        ),
        ("SKILLSTATE_MODE", "off", "mode", "off"),
        ("SKILLSTATE_UPSTREAM_WIRE", "anthropic-messages", "upstream_wire", "anthropic-messages"),
        ("SKILLSTATE_UPSTREAM", "https://api.openai.com/v1", "upstream", "https://api.openai.com"),
        ("SKILLSTATE_HEADER_TIMEOUT", "2.5", "header_timeout", 2.5),
        ("SKILLSTATE_BODY_TIMEOUT", "30", "body_timeout", 30.0),
        ("SKILLSTATE_MAX_CONNECTIONS", "64", "max_connections", 64),
        ("SKILLSTATE_ALLOWED_HOSTS", "GW.lan, [::1]", "allowed_hosts", ("gw.lan", "::1")),
        (
            "SKILLSTATE_ALLOWED_ORIGINS",
            "http://localhost:3000,*",
            "allowed_origins",
            ("http://localhost:3000", "*"),
        ),
    ],
)
def test_environment_text_is_parsed(
    variable: str, text: str, attribute: str, expected: object
) -> None:
    assert getattr(load_settings(environ={variable: text}), attribute) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1", True), ("0", False), ("true", True), ("False", False), ("YES", True), ("no", False)],
)
def test_verbose_from_the_environment(text: str, expected: bool) -> None:
    assert load_settings(environ={"SKILLSTATE_VERBOSE": text}).verbose is expected


def test_upstreams_from_the_environment_as_json() -> None:
    text = '[{"name": "local", "base_url": "http://127.0.0.1:11434/v1", "models": ["llama*"]}]'
    settings = load_settings(environ={"SKILLSTATE_UPSTREAMS": text})
    (local,) = settings.resolved_upstreams()
    assert (local.name, local.base_url, local.models) == (
        "local",
        "http://127.0.0.1:11434",
        ("llama*",),
    )


def test_data_dir_paths_resolve_against_the_file_home_or_working_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    config = write(folder / "s.toml", 'data_dir = "state"\n')
    home = {"HOME": str(tmp_path / "home")}
    assert load_settings(environ=home, config_path=config).data_dir == folder / "state"
    from_home = load_settings(environ={**home, "SKILLSTATE_DATA_DIR": "~/d"})
    assert from_home.data_dir == tmp_path / "home" / "d"
    monkeypatch.chdir(tmp_path)
    assert load_settings(environ=home, cli={"data_dir": "here"}).data_dir == tmp_path / "here"
    assert load_settings(environ=home, cli={"data_dir": Path("p")}).data_dir == tmp_path / "p"
    assert load_settings(environ=home, cli={"data_dir": "."}).data_dir == tmp_path  # no parts


def test_an_unknown_file_key_names_the_key_and_the_file(tmp_path: Path) -> None:
    config = write(tmp_path / "skillstate.toml", "prot = 1\n")
    assert problems(config_path=config) == (
        f"'prot' is not a known key (from config file {config}); did you mean 'port'?",
    )


def test_an_unknown_variable_is_an_error_naming_it() -> None:
    (problem,) = problems(environ={"SKILLSTATE_PROT": "1", "SKILLSTATE_CONFIG_X": "1"})[:1]
    assert problem.startswith("'SKILLSTATE_CONFIG_X' is not a known variable (from environment)")
    found = problems(environ={"SKILLSTATE_PROT": "1"})
    assert found == (
        "'SKILLSTATE_PROT' is not a known variable (from environment); "
        "did you mean 'SKILLSTATE_PORT'?",
    )


def test_lowercase_variables_are_not_ours() -> None:
    assert load_settings(environ={"skillstate_prot": "1"}).port == 8789


def test_a_bad_environment_value_names_key_value_and_variable() -> None:
    assert problems(environ={"SKILLSTATE_PORT": "abc"}) == (
        "port='abc' from environment SKILLSTATE_PORT: not an integer",
    )


def test_a_bad_flag_value_names_the_flag() -> None:
    assert problems(cli={"port": "70000"}) == (
        "port='70000' from command line --port: must be between 1 and 65535",
    )
    assert problems(cli={"port": 0}) == (
        "port=0 from command line --port: must be between 1 and 65535",
    )


def test_an_unknown_flag_key_is_an_error() -> None:
    assert problems(cli={"prot": 1}) == (
        "'prot' is not a known key (from command line); did you mean 'port'?",
    )


def test_an_empty_variable_is_an_error_not_a_default() -> None:
    assert problems(environ={"SKILLSTATE_HOST": ""}) == (
        "host='' from environment SKILLSTATE_HOST: is empty; leave it out for the default",
    )


def test_bad_json_for_initial_state_names_the_key() -> None:
    (problem,) = problems(environ={"SKILLSTATE_INITIAL_STATE": "{bad"})
    assert problem.startswith(
        "initial_state='{bad' from environment SKILLSTATE_INITIAL_STATE: not valid JSON"
    )
    (problem,) = problems(environ={"SKILLSTATE_INITIAL_STATE": "[1]"})
    assert problem.endswith("SKILLSTATE_INITIAL_STATE: not a JSON object")


def test_file_values_must_have_their_toml_type(tmp_path: Path) -> None:
    config = write(
        tmp_path / "s.toml",
        'port = "8789"\nverbose = 1\nupstream_timeout = true\nschema = "a,b"\nmode = "papr"\n',
    )
    source = f"config file {config}"
    assert problems(config_path=config) == (
        f"port='8789' from {source}: not an integer",
        f"mode='papr' from {source}: must be 'paper', 'hybrid' or 'off'",
        f"schema='a,b' from {source}: not a list",
        f"verbose=1 from {source}: not a boolean",
        f"upstream_timeout=True from {source}: not a number",
    )


def test_all_problems_of_one_stage_are_reported_together() -> None:
    found = problems(environ={"SKILLSTATE_PORT": "x", "SKILLSTATE_VERBOSE": "maybe"})
    assert [problem.split("=")[0] for problem in found] == ["port", "verbose"]


def test_a_missing_or_broken_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    assert problems(config_path=str(missing)) == (f"config file {missing} does not exist",)
    broken = write(tmp_path / "broken.toml", "port = \n")
    (problem,) = problems(config_path=broken)
    assert problem.startswith(f"config file {broken} is not valid TOML: ")
    (problem,) = problems(config_path=str(tmp_path))
    assert problem.startswith(f"config file {tmp_path} cannot be read: ")


def test_config_path_is_not_a_key_of_the_file(tmp_path: Path) -> None:
    config = write(tmp_path / "s.toml", 'config = "other.toml"\n')
    (problem,) = problems(config_path=config)
    assert problem.startswith("'config' is not a known key")


def test_settings_are_frozen() -> None:
    settings = load_settings(environ={})
    with pytest.raises(pydantic.ValidationError):
        settings.port = 1  # type: ignore[misc]
    settings.sources["port"] = "changed"
    assert settings.sources["port"] == "default"


def test_an_empty_config_variable_is_an_error() -> None:
    assert problems(environ={"SKILLSTATE_CONFIG": ""}) == (
        "config='' from environment SKILLSTATE_CONFIG: is empty",
    )


def test_a_home_of_an_unknown_user_is_an_error() -> None:
    (problem,) = problems(cli={"data_dir": "~no_such_user_zz/d"})
    assert problem == (
        "data_dir='~no_such_user_zz/d' from command line --data-dir: "
        "names an unknown user (~no_such_user_zz)"
    )


@pytest.mark.parametrize(
    ("variable", "text", "reason"),
    [
        ("SKILLSTATE_SCHEMA", "a,,b", "has an empty item (separate the items with single commas)"),
        ("SKILLSTATE_CONNECT_TIMEOUT", "soon", "not a number"),
        ("SKILLSTATE_CONNECT_TIMEOUT", "0", "must be greater than 0"),
        ("SKILLSTATE_UPSTREAM_TIMEOUT", "inf", "not a number"),
        ("SKILLSTATE_MAX_BODY_BYTES", "-1", "must be greater than 0"),
        ("SKILLSTATE_MAX_BODY_BYTES", "32MiB", "not an integer"),
        ("SKILLSTATE_MAX_MESSAGES", "0", "must be greater than 0"),
        ("SKILLSTATE_MAX_PARTS", "-5", "must be greater than 0"),
        ("SKILLSTATE_MAX_HEADER_LINE_BYTES", "8k", "not an integer"),
        ("SKILLSTATE_MAX_HEADERS", "0", "must be greater than 0"),
    ],
)
def test_bad_text_is_refused_with_a_reason(variable: str, text: str, reason: str) -> None:
    key = variable.removeprefix("SKILLSTATE_").lower()
    assert problems(environ={variable: text}) == (
        f"{key}={text!r} from environment {variable}: {reason}",
    )


def test_upstreams_text_is_never_echoed() -> None:
    text = '[{"name": "a", "headers": {"Authorization": "Bearer sk-x"}}'
    assert problems(environ={"SKILLSTATE_UPSTREAMS": text})[0].startswith(
        "upstreams=(...) from environment SKILLSTATE_UPSTREAMS: not valid JSON"
    )


def test_long_values_are_shortened_in_messages() -> None:
    text = "x" * 200
    (problem,) = problems(environ={"SKILLSTATE_MODE": text})
    shown = problem.split(" from ")[0].removeprefix("mode=")
    assert len(shown) == 80
    assert shown.endswith("...")


def test_initial_state_keys_must_be_in_the_schema() -> None:
    environ = {"SKILLSTATE_INITIAL_STATE": '{"step": 1, "extra": 2}'}
    assert problems(environ=environ, cli={"schema": "step,notes"}) == (
        "initial_state (from environment SKILLSTATE_INITIAL_STATE) and schema "
        "(from command line --schema): initial_state has keys outside the schema: 'extra'",
    )
    assert load_settings(environ=environ).initial_state == {"step": 1, "extra": 2}


def test_the_auth_token_is_a_secret_that_is_never_echoed() -> None:
    token = "t0k3n-0123456789abcdef"
    settings = load_settings(environ={"SKILLSTATE_AUTH_TOKEN": token})
    assert settings.auth_token is not None
    assert settings.auth_token.get_secret_value() == token
    assert token not in repr(settings)
    [problem] = problems(environ={"SKILLSTATE_AUTH_TOKEN": "short-secret"})
    assert problem.startswith("auth_token=(secret) from environment SKILLSTATE_AUTH_TOKEN:")
    assert "at least 16" in problem and "short-secret" not in problem


def test_read_limits_must_be_positive() -> None:
    found = problems(
        environ={
            "SKILLSTATE_HEADER_TIMEOUT": "0",
            "SKILLSTATE_BODY_TIMEOUT": "-1",
            "SKILLSTATE_MAX_CONNECTIONS": "0",
        }
    )
    assert len(found) == 3
    assert all("must be greater than 0" in problem for problem in found)
