"""The price catalog: the shipped data file, resolving model names, and cost from usage."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources

import pytest

from skillstate.conversation import Usage
from skillstate.economics import prices
from skillstate.economics.prices import (
    Price,
    PriceOverride,
    PriceOverrides,
    PricesError,
    builtin_catalog,
    cost,
    parse_catalog,
    parse_overrides,
)

OPENAI = ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano"]
OPENAI += ["gpt-5", "gpt-5-mini", "gpt-5-nano", "o3", "o4-mini"]
ANTHROPIC = ["claude-opus-4", "claude-opus-4-1", "claude-sonnet-4", "claude-sonnet-4-5"]
ANTHROPIC += ["claude-haiku-4-5", "claude-3-7-sonnet", "claude-3-5-sonnet", "claude-3-5-haiku"]


@dataclass(frozen=True)
class SplitUsage:
    """A usage that tells the 1-hour writes apart, as ``Usage`` is about to."""

    input: int = 0
    output: int = 0
    cached_input: int = 0
    cache_write: int = 0
    reasoning: int = 0
    cache_write_1h: int = 0


def test_public_surface() -> None:
    assert sorted(prices.__all__) == sorted(
        [
            "RATES",
            "Billed",
            "Catalog",
            "Price",
            "PriceOverride",
            "PriceOverrides",
            "PricesError",
            "builtin_catalog",
            "cost",
            "parse_catalog",
            "parse_overrides",
        ]
    )


def test_the_catalog_ships_inside_the_package() -> None:
    data = resources.files("skillstate.economics").joinpath("prices.toml")
    assert data.is_file()
    assert parse_catalog(data.read_text(encoding="utf-8")) == builtin_catalog()


def test_the_catalog_is_dated_and_names_its_sources() -> None:
    catalog = builtin_catalog()
    assert isinstance(catalog.as_of, datetime.date)
    assert set(catalog.sources) == {"openai", "anthropic"}
    assert all(url.startswith("https://") for url in catalog.sources.values())
    assert {price.source for price in catalog.prices.values()} == set(catalog.sources.values())


@pytest.mark.parametrize("model", OPENAI)
def test_openai_models_bill_no_cache_write(model: str) -> None:
    price = builtin_catalog().prices[model]
    assert price.cache_write_5m is None and price.cache_write_1h is None
    assert 0 < price.cached_input < price.input < price.output
    assert price.source == builtin_catalog().sources["openai"]


@pytest.mark.parametrize("model", ANTHROPIC)
def test_anthropic_models_follow_the_cache_multipliers(model: str) -> None:
    price = builtin_catalog().prices[model]
    assert price.cache_write_5m == price.input * Decimal("1.25")
    assert price.cache_write_1h == price.input * 2
    assert price.cached_input == price.input / 10
    assert price.source == builtin_catalog().sources["anthropic"]


def test_claude_3_haiku_keeps_the_rounded_figures_of_its_pricing_page() -> None:
    price = builtin_catalog().prices["claude-3-haiku"]
    assert (price.cache_write_5m, price.cached_input) == (Decimal("0.30"), Decimal("0.03"))


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-2024-11-20", "gpt-4o"),
        ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13"),  # a listed snapshot beats its family
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),
        ("gpt-4.1-mini", "gpt-4.1-mini"),
        ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("gpt-4.1-nano-2025-04-14", "gpt-4.1-nano"),
        ("gpt-5-2025-08-07", "gpt-5"),
        ("gpt-5-mini-2025-08-07", "gpt-5-mini"),
        ("gpt-5-nano", "gpt-5-nano"),
        ("gpt-5-chat-latest", "gpt-5"),
        ("o3-2025-04-16", "o3"),
        ("o3-mini", "o3-mini"),
        ("o4-mini-2025-04-16", "o4-mini"),
        ("openai/gpt-4.1", "gpt-4.1"),
        ("openai/gpt-4.1-mini", "gpt-4.1-mini"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-sonnet-4-0", "claude-sonnet-4"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-opus-4-20250514", "claude-opus-4"),
        ("claude-opus-4-0", "claude-opus-4"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("claude-3-7-sonnet-20250219", "claude-3-7-sonnet"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("openrouter/anthropic/claude-3-5-haiku-20241022", "claude-3-5-haiku"),
    ],
)
def test_names_resolve_to_their_family(model: str, family: str) -> None:
    assert builtin_catalog().resolve(model) == family


@pytest.mark.parametrize(
    "model",
    [
        "gpt-4o-audio-preview",  # another model, priced otherwise
        "gpt-4o-mini-search-preview",
        "chatgpt-4o-latest",
        "o3-pro",
        "o4-mini-deep-research",
        "gpt-4",
        "gpt-4o-minimal",
        "claude-opus-4-7",  # not claude-opus-4 with a suffix
        "claude-sonnet",
        "llama-3.1-70b",
        "openai/",
        "",
    ],
)
def test_an_unknown_model_resolves_to_none(model: str) -> None:
    catalog = builtin_catalog()
    assert catalog.resolve(model) is None
    assert catalog.price(model) is None
    assert catalog.cost(model, Usage(input=1000, output=10)) is None


def test_openai_style_usage() -> None:
    # 10,000 input tokens of which 6,000 were read from the cache; 500 output tokens of which
    # 300 were reasoning, billed once as output.
    usage = Usage(input=10_000, output=500, cached_input=6_000, reasoning=300)
    expected = (4_000 * Decimal("1.25") + 6_000 * Decimal("0.125") + 500 * 10) / 1_000_000
    assert builtin_catalog().cost("gpt-5-2025-08-07", usage) == expected == Decimal("0.01075")


def test_anthropic_style_usage_with_five_minute_writes() -> None:
    # input_tokens=100, cache_read=2,000, cache_creation=3,000, as the adapter adds them up.
    usage = Usage(input=5_100, output=200, cached_input=2_000, cache_write=3_000)
    expected = (100 * 3 + 2_000 * Decimal("0.3") + 3_000 * Decimal("3.75") + 200 * 15) / 10**6
    assert builtin_catalog().cost("claude-sonnet-4-5-20250929", usage) == expected
    assert expected == Decimal("0.01515")


def test_one_hour_writes_are_the_part_of_cache_write_at_the_one_hour_rate() -> None:
    usage = SplitUsage(input=5_100, output=200, cached_input=2_000, cache_write=3_000)
    hour = SplitUsage(
        input=5_100, output=200, cached_input=2_000, cache_write=3_000, cache_write_1h=1_000
    )
    price = builtin_catalog().prices["claude-sonnet-4-5"]
    assert cost(price, hour) - cost(price, usage) == 1_000 * (Decimal(6) - Decimal("3.75")) / 10**6
    assert cost(price, hour) == Decimal("0.01740")


def test_one_hour_writes_past_cache_write_count_only_up_to_it() -> None:
    price = builtin_catalog().prices["claude-haiku-4-5"]
    usage = SplitUsage(input=1_000, cache_write=1_000, cache_write_1h=5_000)
    assert cost(price, usage) == 1_000 * Decimal(2) / 10**6


def test_a_model_without_a_write_rate_bills_writes_as_input() -> None:
    price = builtin_catalog().prices["gpt-4.1"]
    written = SplitUsage(input=1_000, cache_write=600, cache_write_1h=200)
    assert cost(price, written) == cost(price, Usage(input=1_000)) == Decimal("0.002")


def test_counts_that_do_not_add_up_bill_no_negative_input() -> None:
    price = builtin_catalog().prices["gpt-4o"]
    assert cost(price, Usage(input=100, cached_input=300)) == 300 * Decimal("1.25") / 10**6


def test_cost_is_exact() -> None:
    price = builtin_catalog().prices["gpt-5-nano"]
    assert cost(price, Usage(input=1, cached_input=1)) == Decimal("0.000000005")
    assert cost(price, Usage(input=3 * 10**9)) == Decimal("150")


def test_nothing_used_costs_nothing_on_a_known_model() -> None:
    assert builtin_catalog().cost("gpt-4o", Usage()) == 0


def test_the_fallback_rates_of_a_price() -> None:
    plain = Price(input=Decimal(2), cached_input=Decimal(1), output=Decimal(8))
    assert (plain.write_5m, plain.write_1h) == (Decimal(2), Decimal(2))
    five = Price(Decimal(2), Decimal(1), Decimal(8), cache_write_5m=Decimal("2.5"))
    assert (five.write_5m, five.write_1h) == (Decimal("2.5"), Decimal("2.5"))


CATALOG = """
as_of = 2025-01-31
[providers.acme]
source = "https://acme.example/pricing"
[models."acme-1"]
provider = "acme"
input = 1.0
cached_input = 0.5
output = 4
aliases = ["acme-one"]
"""


def test_parse_catalog_reads_rates_as_exact_decimals() -> None:
    catalog = parse_catalog(CATALOG)
    assert catalog.as_of == datetime.date(2025, 1, 31)
    assert catalog.prices["acme-1"] == Price(
        Decimal("1.0"), Decimal("0.5"), Decimal(4), source="https://acme.example/pricing"
    )
    assert catalog.resolve("acme-one-latest") == "acme-1"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (CATALOG.replace("as_of = 2025-01-31", ""), "'as_of' must be a date"),
        (CATALOG.replace("2025-01-31", "2025-01-31T10:00:00"), "'as_of' must be a date"),
        (CATALOG.replace('"https://acme.example/pricing"', '"acme"'), "needs a source"),
        (CATALOG.replace('provider = "acme"', 'provider = "other"'), "needs a provider"),
        (CATALOG.replace("cached_input = 0.5\n", ""), "models.'acme-1' needs cached_input"),
        (CATALOG.replace("input = 1.0", "input = -1.0"), "input must not be negative"),
        (CATALOG.replace("output = 4", "output = nan"), "output must be a finite number"),
        (CATALOG.replace("output = 4", 'output = "4"'), "output must be a number"),
        (CATALOG.replace("output = 4", "outptu = 4"), "has no key 'outptu'"),
        (CATALOG.replace('["acme-one"]', '["acme-1"]'), "alias 'acme-1' names another model"),
        (CATALOG + "[models.x", "not valid TOML"),
    ],
)
def test_parse_catalog_names_each_problem(text: str, problem: str) -> None:
    with pytest.raises(PricesError) as caught:
        parse_catalog(text)
    assert problem in str(caught.value)


def test_overrides_replace_only_the_rates_they_give() -> None:
    overrides = parse_overrides({"gpt-4o": {"input": 3, "cached_input": 1.5}})
    listed = builtin_catalog().prices["gpt-4o"]
    merged = builtin_catalog().merged(overrides).prices["gpt-4o"]
    assert (merged.input, merged.cached_input) == (Decimal(3), Decimal("1.5"))
    assert (merged.output, merged.source) == (listed.output, listed.source)
    assert merged.overridden == ("input", "cached_input")
    assert builtin_catalog().prices["gpt-4o"] == listed  # the shipped catalog is unchanged
    assert builtin_catalog().merged(overrides).price("gpt-4o-2024-08-06") == merged


def test_an_unlisted_name_adds_a_model() -> None:
    overrides = parse_overrides({"my-model": {"input": 0.2, "output": 0.8}})
    merged = builtin_catalog().merged(overrides, source="config file /x.toml")
    price = merged.prices["my-model"]
    assert price == Price(
        Decimal("0.2"),
        Decimal("0.2"),  # no discount known
        Decimal("0.8"),
        source="config file /x.toml",
        overridden=("input", "output"),
    )
    assert merged.resolve("my-model-2025-06-01") == "my-model"
    assert merged.cost("my-model", Usage(input=10**6, output=10**6)) == 1


def test_an_added_snapshot_wins_over_its_family() -> None:
    tables = {"gpt-4o-2024-08-06": {"input": 9, "output": 9}}
    merged = builtin_catalog().merged(parse_overrides(tables))
    assert merged.resolve("gpt-4o-2024-08-06") == "gpt-4o-2024-08-06"
    assert merged.resolve("gpt-4o-2024-11-20") == "gpt-4o"


def test_an_addition_without_input_or_output_is_refused() -> None:
    overrides = parse_overrides({"gpt-4o-2024-08-06": {"input": 3}, "mine": {}})
    with pytest.raises(PricesError) as caught:
        builtin_catalog().merged(overrides)
    first, second = caught.value.problems
    assert "prices.'gpt-4o-2024-08-06' is not in the catalog" in first
    assert "needs output" in first and "which it resolves to" in first and "'gpt-4o'" in first
    assert "prices.'mine'" in second and "needs input and output" in second


@pytest.mark.parametrize(
    ("tables", "problem"),
    [
        ({"gpt-4o": 2.5}, "prices.'gpt-4o' must be a table"),
        ({"gpt-4o": {"inptu": 2}}, "has no rate 'inptu'"),
        ({"gpt-4o": {"inptu": 2}}, "did you mean 'input'?"),
        ({"gpt-4o": {"cache_write": 2}}, "rates: input, cached_input, cache_write_5m"),
        ({"gpt-4o": {"input": -0.5}}, "prices.'gpt-4o'.input must not be negative, not -0.5"),
        ({"gpt-4o": {"output": "10"}}, "prices.'gpt-4o'.output must be a number"),
        ({"gpt-4o": {"output": True}}, "prices.'gpt-4o'.output must be a number"),
        ({"gpt-4o": {"output": float("inf")}}, "must be a finite number"),
    ],
)
def test_bad_overrides_are_named(tables: dict[str, object], problem: str) -> None:
    with pytest.raises(PricesError) as caught:
        parse_overrides(tables)
    assert problem in str(caught.value)


def test_every_problem_of_the_overrides_is_reported_at_once() -> None:
    with pytest.raises(PricesError) as caught:
        parse_overrides({"a": {"input": -1, "output": "x"}, "b": 3})
    assert len(caught.value.problems) == 3


def test_overrides_keep_the_exact_decimal_written() -> None:
    overrides = parse_overrides({"gpt-4o": {"input": 0.1, "output": 3}})
    assert overrides == PriceOverrides({"gpt-4o": PriceOverride(Decimal("0.1"), output=Decimal(3))})
    assert overrides.as_json() == {"gpt-4o": {"input": 0.1, "output": 3.0}}


def test_with_a_catalog_parse_overrides_also_refuses_incomplete_additions() -> None:
    tables = {"gpt-4o": {"input": "3"}, "mine": {"input": 1}, "gpt-5": {"output": 9}}
    with pytest.raises(PricesError) as caught:
        parse_overrides(tables, builtin_catalog())
    assert len(caught.value.problems) == 2
    assert "prices.'mine' is not in the catalog" in caught.value.problems[1]
    assert parse_overrides({"mine": {"input": 1}}).models["mine"] == PriceOverride(Decimal(1))
