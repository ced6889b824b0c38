"""describe / describe_json: every key with its value and source, secrets masked."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from skillstate.config import KEYS, describe, describe_json, load_settings, mask_secret
from skillstate.pipeline.switches import names
from skillstate.state.options import CollapseOptions

KEY = "sk-proj-0123456789abcdefwxyz"
ORG = "org-very-private-value"

#: The rows ``describe`` shows by default: every key, the collapse table one row per option.
TABLES = {
    "collapse": [f"collapse.{f.name}" for f in fields(CollapseOptions)],
    "lanes": [f"lanes.{name}" for name in names()],
}
ROWS = [row for key in KEYS for row in TABLES.get(key, [key])]


@pytest.mark.parametrize(
    ("key", "shown"),
    [
        (KEY, "sk-…wxyz"),
        ("sk-ant-api03-0123456789abcdefghij", "sk-…ghij"),
        ("0123456789abcdefghij", "…ghij"),
        ("averyveryverylongprefix-0123456789", "…6789"),
        ("sk-short", "(set)"),
    ],
)
def test_mask_secret(key: str, shown: str) -> None:
    assert mask_secret(key) == shown


def test_every_key_has_a_row_with_its_source(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path), "SKILLSTATE_API_KEY": KEY, "SKILLSTATE_VERBOSE": "yes"}
    settings = load_settings(cli={"port": "9000", "schema": "step,notes"}, environ=environ)
    rows = {key: (value, source) for key, value, source in describe(settings)}
    assert list(rows) == ROWS
    assert rows["port"] == ("9000", "command line --port")
    assert rows["api_key"] == ("sk-…wxyz", "environment SKILLSTATE_API_KEY")
    assert rows["verbose"] == ("true", "environment SKILLSTATE_VERBOSE")
    assert rows["schema"] == ("step,notes", "command line --schema")
    assert rows["upstream"] == ("(not set)", "default")
    assert rows["data_dir"] == (str(tmp_path / ".local/share/skillstate"), "default")
    assert rows["upstream_timeout"] == ("600", "default")


def test_each_upstream_is_a_row_without_its_secrets(tmp_path: Path) -> None:
    config = tmp_path / "s.toml"
    config.write_text(
        '[[upstreams]]\nname = "openai"\nbase_url = "https://api.openai.com/v1"\n'
        f'api_key_env = "OPENAI_KEY"\nheaders = {{ "OpenAI-Organization" = "{ORG}" }}\n'
        '[[upstreams]]\nname = "local"\nbase_url = "http://127.0.0.1:1"\nmodels = ["a*", "b"]\n'
    )
    settings = load_settings(environ={"OPENAI_KEY": KEY}, config_path=str(config))
    rows = [row for row in describe(settings) if row[0].startswith("upstreams")]
    source = f"config file {config}"
    assert rows == [
        (
            "upstreams[0]",
            "name=openai base_url=https://api.openai.com wire=auto models=* "
            "profile=openai(detected) api_key_env=OPENAI_KEY api_key=sk-…wxyz "
            "headers=OpenAI-Organization",
            source,
        ),
        (
            "upstreams[1]",
            "name=local base_url=http://127.0.0.1:1 wire=auto models=a*,b "
            "profile=compatible(detected) retry_first_byte_timeout=false",
            source,
        ),
    ]
    shown = json.dumps(describe_json(settings))
    assert KEY not in shown
    assert ORG not in shown


def test_json_report_keeps_json_types(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path), "SKILLSTATE_INITIAL_STATE": '{"step": 1}'}
    report = describe_json(load_settings(environ=environ, cli={"upstream": "http://h/v1"}))
    assert list(report) == list(KEYS)
    assert report["port"] == {"value": 8789, "source": "default"}
    assert report["upstream"] == {"value": "http://h", "source": "command line --upstream"}
    assert report["initial_state"]["value"] == {"step": 1}
    assert report["schema"]["value"] is None
    assert report["upstreams"]["value"] == []
    assert report["data_dir"]["value"] == str(tmp_path / ".local/share/skillstate")
    assert json.loads(json.dumps(report)) == report


def test_collapse_options_are_rows_each_with_its_own_source(tmp_path: Path) -> None:
    config = tmp_path / "s.toml"
    config.write_text("[collapse]\nkeep_recent_turns = 2\nnudge_when_stale = false\n")
    settings = load_settings(environ={}, config_path=str(config))
    rows = {key: (value, source) for key, value, source in describe(settings)}
    source = f"config file {config}"
    assert rows["collapse.keep_recent_turns"] == ("2", source)
    assert rows["collapse.nudge_when_stale"] == ("false", source)
    assert rows["collapse.min_turns"] == (str(CollapseOptions().min_turns), "default")
    assert list(rows) == ROWS


def test_json_report_gives_the_whole_collapse_table(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path), "SKILLSTATE_COLLAPSE": '{"min_turns": 30}'}
    report = describe_json(load_settings(environ=environ))
    expected = {
        f.name: getattr(CollapseOptions(min_turns=30), f.name) for f in fields(CollapseOptions)
    }
    assert report["collapse"] == {"value": expected, "source": "environment SKILLSTATE_COLLAPSE"}


def test_the_shortcuts_profile_shows_what_was_detected(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path)}
    local = load_settings(cli={"upstream": "http://127.0.0.1:8080/v1"}, environ=environ)
    rows = {key: (value, source) for key, value, source in describe(local)}
    assert rows["upstream_profile"] == ("auto (compatible)", "default")
    official = load_settings(cli={"upstream": "https://api.openai.com/v1"}, environ=environ)
    assert dict((k, v) for k, v, _ in describe(official))["upstream_profile"] == "auto (openai)"
    declared = load_settings(
        cli={"upstream": "http://127.0.0.1:8080", "upstream_profile": "openai"}, environ=environ
    )
    rows = {key: (value, source) for key, value, source in describe(declared)}
    assert rows["upstream_profile"] == ("openai", "command line --upstream-profile")
    alone = load_settings(environ=environ)
    assert dict((k, v) for k, v, _ in describe(alone))["upstream_profile"] == "auto"


def test_the_json_report_gives_each_upstreams_profile_in_use(tmp_path: Path) -> None:
    table = [{"name": "local", "base_url": "http://127.0.0.1:8080", "wire": "openai-chat"}]
    report = describe_json(load_settings(cli={"upstreams": table}, environ={"HOME": str(tmp_path)}))
    listed = report["upstreams"]["value"]
    assert isinstance(listed, list)
    (shown,) = listed
    assert shown["profile"] == "auto"
    assert shown["profile_in_use"] == "compatible"
    assert shown["retry_first_byte_timeout"] is False
