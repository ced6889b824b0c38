"""The ``collapse`` table: the collapse lane's options from the config file, the environment
(``SKILLSTATE_COLLAPSE``, JSON text) or a flag mapping, read by ``state.options.parse_options``."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillstate.config import ConfigError, load_settings
from skillstate.gateway import build_engine
from skillstate.state.options import CollapseOptions
from skillstate.storage.stores import open_stores


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def problems(**kwargs: object) -> tuple[str, ...]:
    kwargs.setdefault("environ", {})
    with pytest.raises(ConfigError) as caught:
        load_settings(**kwargs)  # type: ignore[arg-type]
    return caught.value.problems


def test_the_default_is_the_lanes_own_defaults() -> None:
    settings = load_settings(environ={})
    assert settings.collapse == CollapseOptions()
    assert settings.sources["collapse"] == "default"
    assert not [key for key in settings.sources if key.startswith("collapse.")]


def test_a_table_in_the_config_file(tmp_path: Path) -> None:
    config = write(
        tmp_path / "s.toml",
        "[collapse]\nkeep_recent_turns = 2\nmin_turns = 0\nallow_subagent_sessions = true\n",
    )
    settings = load_settings(environ={}, config_path=config)
    assert settings.collapse == CollapseOptions(
        keep_recent_turns=2, min_turns=0, allow_subagent_sessions=True
    )
    source = f"config file {config}"
    assert settings.sources["collapse"] == source
    assert settings.sources["collapse.keep_recent_turns"] == source
    assert "collapse.stale_after" not in settings.sources


def test_json_text_in_the_environment() -> None:
    environ = {"SKILLSTATE_COLLAPSE": '{"stale_after": 3, "nudge_when_stale": false}'}
    settings = load_settings(environ=environ)
    assert settings.collapse == CollapseOptions(stale_after=3, nudge_when_stale=False)
    assert settings.sources["collapse"] == "environment SKILLSTATE_COLLAPSE"


def test_a_later_source_replaces_the_whole_table(tmp_path: Path) -> None:
    config = write(tmp_path / "s.toml", "[collapse]\nkeep_recent_turns = 2\nmin_turns = 1\n")
    environ = {"SKILLSTATE_COLLAPSE": '{"min_turns": 5}'}
    settings = load_settings(environ=environ, config_path=config)
    assert settings.collapse == CollapseOptions(min_turns=5)
    assert settings.sources["collapse.min_turns"] == "environment SKILLSTATE_COLLAPSE"
    assert "collapse.keep_recent_turns" not in settings.sources
    flagged = load_settings(environ=environ, cli={"collapse": {"enabled": False}})
    assert flagged.collapse == CollapseOptions(enabled=False)
    assert flagged.sources["collapse"] == "command line --collapse"


def test_an_unknown_option_names_it_and_the_source(tmp_path: Path) -> None:
    config = write(tmp_path / "s.toml", "[collapse]\nkeep_recent = 2\n")
    assert problems(config_path=config) == (
        "collapse option 'keep_recent' is unknown; did you mean 'keep_recent_turns'? "
        f"(from config file {config})",
    )


def test_every_bad_option_is_reported_at_once() -> None:
    environ = {"SKILLSTATE_COLLAPSE": '{"enabled": 1, "stale_after": 0, "min_turns": 2.0}'}
    source = "(from environment SKILLSTATE_COLLAPSE)"
    assert problems(environ=environ) == (
        f"collapse option 'enabled' must be true or false, not 1 (int) {source}",
        f"collapse option 'stale_after' must be at least 1, not 0 {source}",
        f"collapse option 'min_turns' must be a whole number, not 2.0 (float) {source}",
    )


def test_problems_elsewhere_are_reported_beside_the_tables() -> None:
    environ = {"SKILLSTATE_COLLAPSE": '{"bogus": true}', "SKILLSTATE_MODE": "papr"}
    found = problems(environ=environ)
    assert len(found) == 2
    assert any("collapse option 'bogus' is unknown" in problem for problem in found)
    assert any(problem.startswith("mode='papr'") for problem in found)


@pytest.mark.parametrize(
    ("text", "reason"),
    [("[1]", "not a JSON object"), ("{bad", "not valid JSON"), ("  ", "is empty")],
)
def test_environment_text_that_is_not_an_object(text: str, reason: str) -> None:
    (problem,) = problems(environ={"SKILLSTATE_COLLAPSE": text})
    assert problem.startswith("collapse=")
    assert "from environment SKILLSTATE_COLLAPSE: " + reason in problem


def test_a_file_value_that_is_not_a_table(tmp_path: Path) -> None:
    config = write(tmp_path / "s.toml", "collapse = 3\n")
    assert problems(config_path=config) == (
        f"collapse=3 from config file {config}: not a table (a JSON object)",
    )


async def test_the_engine_is_built_with_the_configured_options() -> None:
    settings = load_settings(environ={"SKILLSTATE_COLLAPSE": '{"keep_recent_turns": 7}'})
    stores = await open_stores(None)
    try:
        engine = build_engine(settings, stores)
        assert engine.config.options == CollapseOptions(keep_recent_turns=7)
    finally:
        await stores.close()
