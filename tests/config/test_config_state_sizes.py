"""max_state_bytes and max_patch_bytes: typed keys whose values become the state schema's
bounds, checked against each other and against initial_state."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillstate.config import ConfigError, load_settings
from skillstate.gateway import build_engine
from skillstate.state.merge import apply_patch
from skillstate.storage.stores import open_stores


def _problems(environ: dict[str, str]) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as caught:
        load_settings(environ=environ)
    return caught.value.problems


def test_defaults_are_the_schema_bounds() -> None:
    settings = load_settings(environ={})
    assert (settings.max_state_bytes, settings.max_patch_bytes) == (64 * 1024, 16 * 1024)


@pytest.mark.parametrize(
    ("environ", "needle"),
    [
        ({"SKILLSTATE_MAX_STATE_BYTES": "0"}, "must be from 1 to 1048576"),
        ({"SKILLSTATE_MAX_PATCH_BYTES": "2000000"}, "must be from 1 to 1048576"),
        ({"SKILLSTATE_MAX_STATE_BYTES": "64k"}, "not an integer"),
        (
            {"SKILLSTATE_MAX_STATE_BYTES": "1000", "SKILLSTATE_MAX_PATCH_BYTES": "2000"},
            "a patch may not be larger than the state it patches",
        ),
        (
            {
                "SKILLSTATE_MAX_STATE_BYTES": "100",
                "SKILLSTATE_MAX_PATCH_BYTES": "100",
                "SKILLSTATE_INITIAL_STATE": '{"notes": "' + "x" * 200 + '"}',
            },
            "initial_state is 212 bytes as JSON; at most 100 are allowed",
        ),
    ],
)
def test_bad_sizes_are_refused_with_a_reason(environ: dict[str, str], needle: str) -> None:
    assert any(needle in problem for problem in _problems(environ))


def test_a_larger_initial_state_is_allowed_when_the_state_may_be_larger() -> None:
    big = '{"notes": "' + "x" * (80 * 1024) + '"}'
    settings = load_settings(
        environ={"SKILLSTATE_MAX_STATE_BYTES": str(128 * 1024), "SKILLSTATE_INITIAL_STATE": big}
    )
    assert len(settings.initial_state["notes"]) == 80 * 1024


async def test_the_sizes_bound_the_engines_patches(tmp_path: Path) -> None:
    settings = load_settings(
        environ={"SKILLSTATE_MAX_PATCH_BYTES": "200", "SKILLSTATE_DATA_DIR": str(tmp_path)}
    )
    stores = await open_stores(tmp_path)
    try:
        schema = build_engine(settings, stores).config.schema
    finally:
        await stores.close()
    assert schema.bounds.max_patch_bytes == 200
    assert apply_patch(schema, {}, {"findings": {"a": "short"}}).accepted
    assert not apply_patch(schema, {}, {"findings": {"a": "x" * 300}}).accepted
