"""The ``lanes`` tables: each lane switched on or off (``[lanes.NAME] enabled``), from the
config file or ``SKILLSTATE_LANES`` (JSON text); unknown lanes and options are errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillstate.config import ConfigError, load_settings
from skillstate.gateway import build_engine, build_lanes
from skillstate.storage.stores import open_stores


def problems(**kwargs: object) -> str:
    kwargs.setdefault("environ", {})
    with pytest.raises(ConfigError) as caught:
        load_settings(**kwargs)  # type: ignore[arg-type]
    return "\n".join(caught.value.problems)


def test_every_lane_is_on_by_default() -> None:
    settings = load_settings(environ={})
    assert settings.lanes.enabled("state") and settings.lanes.enabled("compaction")


def test_a_lane_is_switched_off_in_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "skillstate.toml"
    config.write_text("[lanes.state]\nenabled = false\n")
    settings = load_settings(environ={}, config_path=str(config))
    assert not settings.lanes.enabled("state") and settings.lanes.enabled("compaction")


def test_json_text_in_the_environment() -> None:
    settings = load_settings(environ={"SKILLSTATE_LANES": '{"compaction": {"enabled": false}}'})
    assert not settings.lanes.enabled("compaction")


def test_unknown_lanes_and_options_are_named() -> None:
    said = problems(environ={"SKILLSTATE_LANES": '{"stat": {"enabled": false}}'})
    assert "'stat' is unknown" in said and "did you mean 'state'" in said
    said = problems(environ={"SKILLSTATE_LANES": '{"state": {"on": true}}'})
    assert "lanes.state has no option 'on'" in said
    said = problems(environ={"SKILLSTATE_LANES": '{"state": {"enabled": "no"}}'})
    assert "lanes.state.enabled must be true or false" in said


async def test_the_lane_list_leaves_out_what_is_off(tmp_path: Path) -> None:
    on = load_settings(environ={}, cli={"data_dir": str(tmp_path)})
    off = load_settings(
        environ={"SKILLSTATE_LANES": '{"state": {"enabled": false}}'},
        cli={"data_dir": str(tmp_path)},
    )
    stores = await open_stores(tmp_path)
    try:
        engine = build_engine(on, stores)
        assert [lane.name for lane in build_lanes(on, engine)] == ["compaction", "state"]
        assert [lane.name for lane in build_lanes(off, engine)] == ["compaction"]
    finally:
        await stores.close()
