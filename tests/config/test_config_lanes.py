"""The ``lanes`` tables: each lane switched on or off (``[lanes.NAME] enabled``), from the
config file or ``SKILLSTATE_LANES`` (JSON text), or the set chosen by name (``--lanes a,b``,
``SKILLSTATE_LANES=a,b``); unknown lanes and options are errors."""

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


def test_the_default_lanes() -> None:
    settings = load_settings(environ={})
    assert settings.lanes.enabled("state") and settings.lanes.enabled("compaction")
    assert not settings.lanes.enabled("schemas")  # rewrites the client's tools: asked for


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


async def test_every_lane_is_built_and_the_switched_off_ones_are_not_on(tmp_path: Path) -> None:
    on = load_settings(environ={}, cli={"data_dir": str(tmp_path)})
    off = load_settings(
        environ={"SKILLSTATE_LANES": '{"state": {"enabled": false}}'},
        cli={"data_dir": str(tmp_path)},
    )
    stores = await open_stores(tmp_path)
    try:
        engine = build_engine(on, stores)
        # Built whatever the switches say: a request may ask for one that is off.
        built = [lane.name for lane in build_lanes(off, engine)]
        assert built == [
            "compaction", "schemas", "style", "effort", "state", "vision", "outputs"
        ]  # fmt: skip
    finally:
        await stores.close()
    assert on.lanes.on() == {"compaction", "state", "outputs"}  # schemas: off unless asked
    assert off.lanes.on() == {"compaction", "outputs"}


def test_names_choose_the_set_from_the_environment_or_a_flag() -> None:
    assert load_settings(environ={"SKILLSTATE_LANES": "state"}).lanes.on() == {"state"}
    assert load_settings(environ={"SKILLSTATE_LANES": "none"}).lanes.on() == frozenset()
    chosen = load_settings(environ={"SKILLSTATE_LANES": "state"}, cli={"lanes": "compaction"})
    assert chosen.lanes.on() == {"compaction"}  # the flag over the environment


def test_a_chosen_set_keeps_the_tables_and_switches_only_enabled(tmp_path: Path) -> None:
    config = tmp_path / "skillstate.toml"
    config.write_text("[lanes.compaction]\nenabled = false\n")
    settings = load_settings(environ={}, config_path=str(config), cli={"lanes": "compaction"})
    assert settings.lanes.on() == {"compaction"}  # the choice over the file's switch


def test_unknown_names_in_a_chosen_set_are_named() -> None:
    said = problems(environ={"SKILLSTATE_LANES": "state,compacton"})
    assert "'compacton' is unknown" in said and "did you mean 'compaction'" in said
    assert "SKILLSTATE_LANES" in said


def test_a_lanes_options_come_from_its_table(tmp_path: Path) -> None:
    config = tmp_path / "skillstate.toml"
    config.write_text("[lanes.schemas]\nenabled = true\ndescription_chars = 2000\n")
    settings = load_settings(environ={}, config_path=str(config))
    assert settings.lanes.options_for("schemas").description_chars == 2000
    assert "schemas=on (description_chars=2000)" in str(settings.lanes)  # skillstate config
    config.write_text("[lanes.schemas]\ndescription_chars = 2000\n")
    kept_off = load_settings(environ={}, config_path=str(config)).lanes
    assert "schemas=off (description_chars=2000)" in str(kept_off)  # options alone: still off
    assert load_settings(environ={}).lanes.options_for("schemas").description_chars == 0
    # Choosing the set by name keeps the options the file gave.
    chosen = load_settings(environ={}, config_path=str(config), cli={"lanes": "state"})
    assert chosen.lanes.on() == {"state"}
    assert chosen.lanes.options_for("schemas").description_chars == 2000
    switched = load_settings(environ={}, config_path=str(config), cli={"lanes": "schemas,state"})
    assert switched.lanes.on() == {"schemas", "state"}


async def test_the_built_lane_takes_its_options(tmp_path: Path) -> None:
    settings = load_settings(
        environ={"SKILLSTATE_LANES": '{"schemas": {"description_chars": 300}}'},
        cli={"data_dir": str(tmp_path)},
    )
    stores = await open_stores(tmp_path)
    try:
        (schemas,) = [
            lane
            for lane in build_lanes(settings, build_engine(settings, stores))
            if lane.name == "schemas"
        ]
    finally:
        await stores.close()
    assert schemas.options.description_chars == 300  # type: ignore[attr-defined]


def test_options_of_the_wrong_name_type_or_bound_are_named() -> None:
    said = problems(environ={"SKILLSTATE_LANES": '{"schemas": {"description": 3}}'})
    assert "lanes.schemas has no option 'description'" in said and "description_chars" in said
    said = problems(environ={"SKILLSTATE_LANES": '{"schemas": {"description_chars": "many"}}'})
    assert "lanes.schemas.description_chars must be an integer, not 'many'" in said
    said = problems(environ={"SKILLSTATE_LANES": '{"schemas": {"description_chars": true}}'})
    assert "must be an integer" in said
    said = problems(environ={"SKILLSTATE_LANES": '{"schemas": {"description_chars": 10}}'})
    assert "description_chars must be 0 (never cut) or at least 64" in said


def test_the_vision_lanes_options_come_from_its_table(tmp_path: Path) -> None:
    config = tmp_path / "skillstate.toml"
    config.write_text(
        "[lanes.vision]\nenabled = true\nmax_pages = 2\nmin_ratio = 3\n"
        'models = ["gpt-4.1*", "my-model"]\n'
    )
    settings = load_settings(environ={}, config_path=str(config))
    options = settings.lanes.options_for("vision")
    assert settings.lanes.enabled("vision")
    assert (options.max_pages, options.min_ratio) == (2, 3)
    assert options.models == ("gpt-4.1*", "my-model")  # a tuple: the options stay frozen
    assert "vision=on (min_chars=4000, max_pages=2" in str(settings.lanes)
    default = load_settings(environ={}).lanes
    assert not default.enabled("vision")  # off unless switched on
    assert default.options_for("vision").models == ("gpt-4o*", "gpt-4.1*", "gpt-5*", "claude-*")


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ('{"vision": {"max_pages": 0}}', "max_pages must be from 1 to 16"),
        ('{"vision": {"min_ratio": 0.5}}', "min_ratio must be at least 1.0"),
        ('{"vision": {"models": "gpt-4o"}}', "lanes.vision.models must be a list of strings"),
        ('{"vision": {"font_size": "big"}}', "lanes.vision.font_size must be an integer"),
        ('{"vision": {"pages": 2}}', "lanes.vision has no option 'pages'"),
    ],
)
def test_the_vision_lanes_options_are_checked(table: str, named: str) -> None:
    assert named in problems(environ={"SKILLSTATE_LANES": table})


async def test_the_vision_lane_on_without_pillow_is_an_error_at_startup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from skillstate.outputs.vision.pages import MissingPillow

    settings = load_settings(environ={"SKILLSTATE_LANES": "state,vision"})
    monkeypatch.setitem(sys.modules, "PIL", None)  # what a missing Pillow looks like
    stores = await open_stores(tmp_path)
    try:
        with pytest.raises(
            MissingPillow,
            match=r"install the \[vision\] extra \(from a clone: pipx install '\.\[vision\]'",
        ):
            build_lanes(settings, build_engine(settings, stores))
        off = load_settings(environ={"SKILLSTATE_LANES": "state"})
        assert "vision" in [lane.name for lane in build_lanes(off, build_engine(off, stores))]
    finally:
        await stores.close()


LINEUP_READ = """
import sys
from skillstate.cli import shell  # what `skillstate hook` and `skillstate shell` import
from skillstate.config import load_settings
settings = load_settings(environ={{}}, cli={{"data_dir": "{data}"}})
print("{marker}" in sys.modules)
settings = load_settings(environ={{"SKILLSTATE_LANES": "state"}})
print("{marker}" in sys.modules, sorted(settings.lanes.on()))
"""


def test_reading_a_config_that_names_no_lane_imports_no_lane(tmp_path: Path) -> None:
    """The lanes' modules import what they run on (the state engine, the protocols, the
    archive: about a tenth of a second); the shell hook reads the config on every shell call
    of an agent, so the list is imported only when the config names lanes."""
    import os
    import subprocess
    import sys

    code = LINEUP_READ.format(marker="skillstate.pipeline.lineup", data=tmp_path)
    env = {key: value for key, value in os.environ.items() if not key.startswith("SKILLSTATE_")}
    ran = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["False", "True ['state']"]
