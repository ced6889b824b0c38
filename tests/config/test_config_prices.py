"""The ``prices`` tables: corrections and additions to the price catalog, from the config file
or ``SKILLSTATE_PRICES`` (JSON text), read by ``economics.prices.parse_overrides``."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from skillstate.config import ConfigError, describe, describe_json, load_settings
from skillstate.economics.prices import PriceOverride, PriceOverrides, builtin_catalog

CONFIG = """
[prices."gpt-4o"]
input = 3
cached_input = 1.5

[prices."my-model"]
input = 0.2
output = 0.8
"""


def problems(**kwargs: object) -> tuple[str, ...]:
    kwargs.setdefault("environ", {})
    with pytest.raises(ConfigError) as caught:
        load_settings(**kwargs)  # type: ignore[arg-type]
    return caught.value.problems


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_no_overrides_by_default() -> None:
    settings = load_settings(environ={})
    assert settings.prices == PriceOverrides()
    assert settings.sources["prices"] == "default"
    assert ("prices", "(none)", "default") in describe(settings)


def test_tables_in_the_config_file_override_and_add(tmp_path: Path) -> None:
    config = write(tmp_path / "s.toml", CONFIG)
    settings = load_settings(environ={}, config_path=config)
    assert settings.prices.models == {
        "gpt-4o": PriceOverride(input=Decimal(3), cached_input=Decimal("1.5")),
        "my-model": PriceOverride(input=Decimal("0.2"), output=Decimal("0.8")),
    }
    catalog = builtin_catalog().merged(settings.prices, source=settings.sources["prices"])
    assert catalog.prices["gpt-4o"].input == 3
    assert catalog.prices["gpt-4o"].output == builtin_catalog().prices["gpt-4o"].output
    assert catalog.prices["my-model"].source == f"config file {config}"


def test_json_text_in_the_environment() -> None:
    settings = load_settings(environ={"SKILLSTATE_PRICES": '{"o3": {"output": 6.5}}'})
    assert settings.prices.models == {"o3": PriceOverride(output=Decimal("6.5"))}
    assert settings.sources["prices"] == "environment SKILLSTATE_PRICES"


def test_skillstate_config_shows_one_row_per_model(tmp_path: Path) -> None:
    config = write(tmp_path / "s.toml", CONFIG)
    settings = load_settings(environ={}, config_path=config)
    rows = [row for row in describe(settings) if row[0].startswith("prices")]
    source = f"config file {config}"
    assert rows == [
        ("prices.gpt-4o", "input=3 cached_input=1.5", source),
        ("prices.my-model", "input=0.2 output=0.8", source),
    ]
    report = describe_json(settings)["prices"]
    assert report == {
        "value": {
            "gpt-4o": {"input": 3.0, "cached_input": 1.5},
            "my-model": {"input": 0.2, "output": 0.8},
        },
        "source": source,
    }
    assert json.loads(json.dumps(report)) == report


def test_bad_values_are_named_with_their_source(tmp_path: Path) -> None:
    config = write(
        tmp_path / "s.toml",
        '[prices."gpt-4o"]\ninptu = 3\noutput = -1\n'
        '[prices."gpt-4o-2024-08-06"]\ninput = 3\n'
        '[prices.x]\noutput = "10"\n',
    )
    source = f"(from config file {config})"
    assert problems(config_path=config) == (
        "prices.'gpt-4o' has no rate 'inptu' (rates: input, cached_input, cache_write_5m, "
        f"cache_write_1h, output); did you mean 'input'? {source}",
        f"prices.'gpt-4o'.output must not be negative, not -1 {source}",
        "prices.'gpt-4o-2024-08-06' is not in the catalog, so it adds a model, and an added "
        "model needs output; to change the prices of 'gpt-4o', which it resolves to, name that "
        f"table {source}",
        f"prices.'x'.output must be a number (USD per million tokens), not '10' {source}",
    )


def test_a_table_that_is_not_one(tmp_path: Path) -> None:
    said = problems(environ={"SKILLSTATE_PRICES": '{"gpt-4o": 2.5}'})
    assert said == (
        "prices.'gpt-4o' must be a table, e.g. {input = 2.5, output = 10} "
        "(from environment SKILLSTATE_PRICES)",
    )
    config = write(tmp_path / "s.toml", 'prices = "cheap"\n')
    (said,) = problems(config_path=config)
    assert said == f"prices='cheap' from config file {config}: not a table (a JSON object)"
