"""docs/configuration.md is the page ``config.reference`` renders from the typed settings: the
committed page is that rendering exactly (``make docs`` writes it), and the rendering names
every key with its default, its environment variable and its flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillstate.cli.reference import configuration_page, flags
from skillstate.config.reference import UPSTREAM_NOTES, render_reference
from skillstate.config.settings import ATTRIBUTES, KEYS, Settings
from skillstate.config.template import NOTES, default_settings
from skillstate.config.upstream_settings import UpstreamSettings

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def rows(page: str) -> dict[str, list[str]]:
    """The key table's rows, by key: the cells after the key's."""
    found = {}
    for line in page.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        if len(cells) == 5 and cells[0].startswith("`") and cells[0] != "`key`":
            found[cells[0].strip("`")] = cells[1:]
    return found


def test_the_committed_page_is_the_rendering() -> None:
    assert PAGE.read_text() == configuration_page(), (
        "docs/configuration.md is out of date: run `make docs` (or "
        "`python -m skillstate.cli.reference docs/configuration.md`) and commit it"
    )


def test_every_key_has_a_row_with_its_environment_name_and_note() -> None:
    table = rows(configuration_page())
    assert list(table) == list(KEYS)
    for key, (_, environment, _, note) in table.items():
        assert environment.startswith(f"`SKILLSTATE_{key.upper()}` ("), key
        assert note == NOTES[key].replace("|", "\\|"), key


def test_every_plain_default_is_shown_as_its_value() -> None:
    defaults = default_settings({})
    table = rows(configuration_page())
    for key in ("port", "host", "mode", "retries", "max_body_bytes", "verbose", "body_timeout"):
        value = getattr(defaults, ATTRIBUTES[key])
        shown = table[key][0].strip("`").strip('"')
        expected = {True: "true", False: "false"}.get(value, str(getattr(value, "value", value)))
        assert shown == expected, key
    # Every default of a scalar key is Settings' own (none is written by hand).
    for name, field in Settings.model_fields.items():
        key = field.alias or name
        if isinstance(field.default, int | float | str) and not isinstance(field.default, bool):
            assert str(field.default) in table[key][0], key


def test_every_flag_is_named_on_its_keys_row() -> None:
    table = rows(configuration_page())
    found = flags()
    assert {"port", "host", "upstream", "mode", "lanes", "data_dir", "verbose"} <= set(found)
    for key, flag in found.items():
        assert table[key][2] == f"`{flag}`", key
    assert all(cells[2] == "" for key, cells in table.items() if key not in found)


def test_every_table_option_is_listed() -> None:
    page = configuration_page()
    defaults = default_settings({})
    for option in defaults.collapse.__dataclass_fields__:
        assert f"| `{option}` |" in page, option
    for lane, options in defaults.lanes.as_json().items():
        for option in options:
            assert f"| `{lane}` | `{option}` |" in page, (lane, option)
    fields = set(UpstreamSettings.model_fields) - {"api_key"}
    assert set(UPSTREAM_NOTES) == fields
    for field in fields:
        assert f"| `{field}` |" in page, field


def test_a_flag_for_no_key_is_refused() -> None:
    with pytest.raises(ValueError, match="no_such_key"):
        render_reference(default_settings({}), {"no_such_key": "--nope"})
