"""The price catalog: what a model's tokens cost, and what one exchange's usage cost.

The figures are providers' list prices in US dollars per million tokens, dated, in the
``prices.toml`` data file shipped with this package (its header says where they come from and
what is left out). The config's ``[prices."model-name"]`` tables correct a listed model or add
one (``parse_overrides``, ``Catalog.merged``). Everything here is pure: ``builtin_catalog``
reads the package's own data file, once, and nothing happens at import.

A model name resolves to a catalog entry by ``Catalog.resolve``; an unknown model has no price,
and its cost is ``None``, never 0: a ledger counts it as unpriced rather than as free.
"""

from __future__ import annotations

import datetime
import difflib
import functools
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal
from importlib import resources
from types import MappingProxyType
from typing import Protocol

__all__ = [
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

_MILLION = Decimal(1_000_000)

RATES = ("input", "cached_input", "cache_write_5m", "cache_write_1h", "output")
"""The rates of one model, USD per million tokens, in the order they are shown."""

_REQUIRED = ("input", "output")
"""The rates a model must have; the others fall back (see ``Price``)."""


class PricesError(ValueError):
    """A catalog or a table of overrides could not be read; ``problems`` holds one line per
    bad entry, each naming it."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True, slots=True)
class Price:
    """One model's rates, USD per million tokens, and where they came from.

    ``cache_write_5m`` and ``cache_write_1h`` are ``None`` where the provider bills no cache
    write (OpenAI: its cache fills by itself and a write costs what plain input costs).
    ``source`` is the pricing page the figures were copied from, or the config source of a
    model the config added; ``overridden`` names the rates the config changed.
    """

    input: Decimal
    cached_input: Decimal
    output: Decimal
    cache_write_5m: Decimal | None = None
    cache_write_1h: Decimal | None = None
    source: str = ""
    overridden: tuple[str, ...] = ()

    @property
    def write_5m(self) -> Decimal:
        """What a token written with the 5-minute TTL costs: the input rate where the provider
        bills no write."""
        return self.input if self.cache_write_5m is None else self.cache_write_5m

    @property
    def write_1h(self) -> Decimal:
        """What a token written with the 1-hour TTL costs: the 5-minute rate where no 1-hour
        rate is known."""
        return self.write_5m if self.cache_write_1h is None else self.cache_write_1h


class Billed(Protocol):
    """The usage counts ``cost`` reads (``conversation.Usage`` is one)."""

    @property
    def input(self) -> int: ...

    @property
    def output(self) -> int: ...

    @property
    def cached_input(self) -> int: ...

    @property
    def cache_write(self) -> int: ...

    @property
    def cache_write_1h(self) -> int: ...


def cost(price: Price, usage: Billed) -> Decimal:
    """What ``usage`` costs at ``price``, in USD, exactly (``Decimal``).

    The usage convention (the gateway's adapters normalise every wire into it):

    * ``input`` counts ALL input tokens the provider counted, cached and cache-written ones
      included. OpenAI reports it so; Anthropic reports three disjoint counts, and the adapter
      adds them: ``input = input_tokens + cache_read_input_tokens + cache_creation_input_tokens``.
    * ``cached_input`` are the tokens read from the cache, ``cache_write`` those written to it.
      ``cache_write_1h``, where the usage has it, is the part of ``cache_write`` written with
      the 1-hour TTL; the rest was written with the 5-minute one.
    * ``output`` counts every output token, reasoning included: providers bill reasoning as
      output, so ``reasoning`` (a part of ``output``) is not added again.

    The formula, with every rate per million tokens::

        uncached = input - cached_input - cache_write
        cost = (uncached * input_rate
                + cached_input * cached_input_rate
                + (cache_write - cache_write_1h) * write_5m_rate
                + cache_write_1h * write_1h_rate
                + output * output_rate) / 1,000,000

    A model without a write rate bills writes at its input rate (``Price.write_5m``). Counts
    that do not add up (more cached and written tokens than input) leave ``uncached`` at 0
    rather than below it.
    """
    written = usage.cache_write
    written_1h = min(usage.cache_write_1h, written)
    uncached = max(usage.input - usage.cached_input - written, 0)
    total = (
        uncached * price.input
        + usage.cached_input * price.cached_input
        + (written - written_1h) * price.write_5m
        + written_1h * price.write_1h
        + usage.output * price.output
    )
    return total / _MILLION


_RESOLVED = 4096
"""How many model names a catalog keeps its resolution of."""

# A snapshot or alias suffix after a family's name: a date (Anthropic's 20250929, OpenAI's
# 2024-08-06 and older 0613), ``-latest``, ``-preview``. Only these: ``gpt-4o-mini`` is another
# model than ``gpt-4o``, and ``claude-opus-4-1`` than ``claude-opus-4``, so a family's name
# followed by anything else is not that family.
_SNAPSHOT = re.compile(r"(?:-(?:\d{8}|\d{4}-\d{2}-\d{2}|\d{4}|latest|preview))+")


@dataclass(frozen=True, slots=True)
class Catalog:
    """Models' prices by name, dated. Build it with ``parse_catalog`` or ``builtin_catalog``.

    ``sources`` maps each provider to its pricing page; ``aliases`` maps other names of a
    model to its entry in ``prices``.
    """

    as_of: datetime.date
    prices: Mapping[str, Price]
    aliases: Mapping[str, str] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    effort: frozenset[str] = frozenset()
    """The listed models that take a reasoning effort (the catalog's ``[effort] models``)."""
    _resolved: dict[str, str | None] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    """``resolve``'s answers by model name (every ledger row asks), at most ``_RESOLVED``."""

    def accepts_effort(self, model: str) -> bool:
        """Whether ``model`` (resolved as for its price) takes a reasoning effort."""
        return self.resolve(model) in self.effort

    def resolve(self, model: str) -> str | None:
        """The catalog entry ``model`` is priced by, or ``None`` for a model not listed.

        In order: the name itself, then the name without a provider prefix
        (``openai/gpt-4.1``, ``openrouter/anthropic/claude-sonnet-4-5``). Each is looked up
        as a listed name or alias, else as the longest listed name it starts with when what
        follows is only snapshot suffixes (``gpt-4o-2024-08-06``, ``claude-3-5-sonnet-latest``).
        A listed snapshot (``gpt-4o-2024-05-13``) wins over its family.
        """
        if model in self._resolved:
            return self._resolved[model]
        found = self._resolve(model)
        if len(self._resolved) < _RESOLVED:  # names are the clients' to choose: bounded
            self._resolved[model] = found
        return found

    def _resolve(self, model: str) -> str | None:
        names = [model.strip()]
        if "/" in names[0]:
            names.append(names[0].rsplit("/", 1)[1])
        for name in names:
            found = self._target(name) or self._snapshot_of(name)
            if found is not None:
                return found
        return None

    def price(self, model: str) -> Price | None:
        """The price of ``model`` (resolved), or ``None`` for a model not listed."""
        name = self.resolve(model)
        return None if name is None else self.prices[name]

    def cost(self, model: str, usage: Billed) -> Decimal | None:
        """What ``usage`` of ``model`` cost in USD (see ``cost``); ``None`` when the model has
        no price, which a ledger counts as unpriced, never as free."""
        price = self.price(model)
        return None if price is None else cost(price, usage)

    def merged(self, overrides: PriceOverrides, source: str = "config") -> Catalog:
        """This catalog with ``overrides`` applied: a listed name's given rates replace its
        own, an unlisted name is added (it needs ``input`` and ``output``; ``cached_input``
        defaults to ``input``). ``source`` names where an added model came from.

        Raises ``PricesError`` naming every addition that lacks a required rate.
        """
        prices = dict(self.prices)
        problems: list[str] = []
        for name, override in overrides.models.items():
            given = override.given()
            if name in prices:
                prices[name] = _overridden(prices[name], given)
                continue
            if (problem := self._incomplete(name, override)) is not None:
                problems.append(problem)
            elif (added := _priced(override, source)) is not None:
                prices[name] = replace(added, overridden=tuple(given))
        if problems:
            raise PricesError(problems)
        return replace(self, prices=MappingProxyType(prices))

    def as_json(self) -> dict[str, object]:
        """The catalog as a JSON document (``skillstate prices --json``)::

            {"as_of": "2025-11-24", "currency": "USD", "unit": "per million tokens",
             "models": [{"model", "input", "cached_input", "cache_write_5m",
                         "cache_write_1h", "output", "source", "override"}, ...]}

        Rates are numbers, a write rate the provider does not bill is ``null``, ``override``
        is true for a model whose rates the config changed or added.
        """
        return {
            "as_of": self.as_of.isoformat(),
            "currency": "USD",
            "unit": "per million tokens",
            "models": [
                {
                    "model": name,
                    **{rate: _number(getattr(price, rate)) for rate in RATES},
                    "source": price.source,
                    "override": bool(price.overridden),
                }
                for name, price in self.prices.items()
            ],
        }

    def _incomplete(self, name: str, override: PriceOverride) -> str | None:
        """What is wrong with ``override`` as an addition to this catalog, if anything."""
        missing = [rate for rate in _REQUIRED if getattr(override, rate) is None]
        if name in self.prices or not missing:
            return None
        text = (
            f"prices.{name!r} is not in the catalog, so it adds a model, "
            f"and an added model needs {' and '.join(missing)}"
        )
        resolved = self.resolve(name)
        if resolved is not None:
            text += f"; to change the prices of {resolved!r}, which it resolves to, name that table"
        return text

    def _target(self, name: str) -> str | None:
        if name in self.prices:
            return name
        return self.aliases.get(name)

    def _snapshot_of(self, name: str) -> str | None:
        """The entry of the longest listed name that ``name`` is a snapshot of."""
        for known in sorted([*self.prices, *self.aliases], key=len, reverse=True):
            if name.startswith(known) and _SNAPSHOT.fullmatch(name, len(known)):
                return self._target(known)
        return None


def _number(amount: Decimal | None) -> float | None:
    return None if amount is None else float(amount)


def _overridden(listed: Price, given: Mapping[str, Decimal]) -> Price:
    return Price(
        input=given.get("input", listed.input),
        cached_input=given.get("cached_input", listed.cached_input),
        output=given.get("output", listed.output),
        cache_write_5m=given.get("cache_write_5m", listed.cache_write_5m),
        cache_write_1h=given.get("cache_write_1h", listed.cache_write_1h),
        source=listed.source,
        overridden=tuple(given),
    )


def _priced(rates: PriceOverride, source: str) -> Price | None:
    """A price from rates alone, or ``None`` without ``input`` and ``output``. Without
    ``cached_input`` no cache discount is known, so cached input costs what input costs."""
    if rates.input is None or rates.output is None:
        return None
    return Price(
        input=rates.input,
        cached_input=rates.input if rates.cached_input is None else rates.cached_input,
        output=rates.output,
        cache_write_5m=rates.cache_write_5m,
        cache_write_1h=rates.cache_write_1h,
        source=source,
    )


@functools.cache
def builtin_catalog() -> Catalog:
    """The catalog shipped in this package (``prices.toml``), read on first use."""
    data = resources.files("skillstate.economics").joinpath("prices.toml")
    return parse_catalog(data.read_text(encoding="utf-8"))


def parse_catalog(text: str) -> Catalog:
    """A ``Catalog`` from the TOML text of a catalog file (the shape of ``prices.toml``).

    Raises ``PricesError`` listing every problem: a missing ``as_of`` date, a model without a
    known provider, a missing or negative rate, an unknown key, an alias used twice.
    """
    try:
        document = tomllib.loads(text, parse_float=Decimal)
    except tomllib.TOMLDecodeError as exc:
        raise PricesError([f"the catalog is not valid TOML: {exc}"]) from None
    problems: list[str] = []
    as_of = document.get("as_of")
    if not isinstance(as_of, datetime.date) or isinstance(as_of, datetime.datetime):
        problems.append("the catalog's 'as_of' must be a date (as_of = 2025-01-31)")
    sources = _sources(document.get("providers"), problems)
    prices: dict[str, Price] = {}
    aliases: dict[str, str] = {}
    models = document.get("models")
    if not isinstance(models, dict):
        models = {}
    for name, table in models.items():
        entry = _listed(name, table, sources, problems)
        if entry is None:
            continue
        prices[name], names = entry
        for alias in names:
            if alias in aliases or alias in models:
                problems.append(f"models.{name!r}: alias {alias!r} names another model too")
            aliases[alias] = name
    if not prices:
        problems.append("the catalog lists no models (its [models.NAME] tables)")
    effort = _effort(document.get("effort", {}), models, problems)
    if problems:
        raise PricesError(problems)
    assert isinstance(as_of, datetime.date)  # checked above
    return Catalog(
        as_of,
        MappingProxyType(prices),
        MappingProxyType(aliases),
        MappingProxyType(sources),
        effort,
    )


def _effort(table: object, models: Mapping[str, object], problems: list[str]) -> frozenset[str]:
    """``[effort] models``: listed model names, each taking a reasoning effort."""
    names = table.get("models", []) if isinstance(table, dict) else None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        problems.append("the catalog's [effort] models must be a list of model names")
        return frozenset()
    unknown = [name for name in names if name not in models]
    problems.extend(f"[effort] names {name!r}, which no [models] table lists" for name in unknown)
    return frozenset(names)


def _sources(providers: object, problems: list[str]) -> dict[str, str]:
    sources: dict[str, str] = {}
    for name, table in providers.items() if isinstance(providers, dict) else ():
        url = table.get("source") if isinstance(table, dict) else None
        if isinstance(url, str) and url.startswith("https://"):
            sources[name] = url
        else:
            problems.append(f"providers.{name!r} needs a source, the https:// URL of its prices")
    return sources


_LISTED_KEYS = frozenset({*RATES, "provider", "aliases", "source"})


def _listed(
    name: str, table: object, sources: Mapping[str, str], problems: list[str]
) -> tuple[Price, list[str]] | None:
    if not isinstance(table, dict):
        problems.append(f"models.{name!r} must be a table")
        return None
    where = f"models.{name!r}"
    unknown = sorted(set(table) - _LISTED_KEYS)
    problems.extend(f"{where} has no key {key!r}" for key in unknown)
    rates = dict(_rates(where, table, problems))
    # A listed model states its cache discount; only an added one may leave it out.
    missing = [rate for rate in (*_REQUIRED, "cached_input") if rate not in rates]
    problems.extend(f"{where} needs {rate}" for rate in missing)
    source = table.get("source", sources.get(str(table.get("provider")), None))
    if not isinstance(source, str):
        problems.append(f"{where} needs a provider listed under [providers] (or a source)")
    aliases = table.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(alias, str) for alias in aliases):
        problems.append(f"{where}: aliases must be a list of names")
        aliases = []
    price = None if not isinstance(source, str) else _priced(PriceOverride(**rates), source)
    if unknown or missing or price is None:
        return None
    return price, aliases


def _rates(
    where: str, table: Mapping[str, object], problems: list[str]
) -> Iterator[tuple[str, Decimal]]:
    for rate in RATES:
        if rate in table:
            amount, problem = _amount(table[rate])
            if problem is None:
                yield rate, amount
            else:
                problems.append(f"{where}.{rate} {problem}")


def _amount(value: object) -> tuple[Decimal, str | None]:
    """``value`` as an exact amount, or a problem (worded after the rate's name)."""
    # bool is a subclass of int: ``input = true`` is not 1 dollar.
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return Decimal(0), f"must be a number (USD per million tokens), not {value!r}"
    # A float from a config file or JSON text becomes the decimal it was written as (2.5, not
    # 2.5000000000000000001): its repr is the shortest text that reads back to it.
    amount = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not amount.is_finite():
        return amount, f"must be a finite number, not {value!r}"
    if amount < 0:
        return amount, f"must not be negative, not {value!r}"
    return amount, None


@dataclass(frozen=True, slots=True)
class PriceOverride:
    """The rates one ``[prices."model-name"]`` table gives; ``None`` keeps the catalog's."""

    input: Decimal | None = None
    cached_input: Decimal | None = None
    cache_write_5m: Decimal | None = None
    cache_write_1h: Decimal | None = None
    output: Decimal | None = None

    def given(self) -> dict[str, Decimal]:
        """The rates this table sets, by name, in ``RATES`` order."""
        return {
            rate.name: value
            for rate in fields(self)
            if (value := getattr(self, rate.name)) is not None
        }


@dataclass(frozen=True, slots=True)
class PriceOverrides:
    """The config's ``[prices."model-name"]`` tables, by model name, in the order given."""

    models: Mapping[str, PriceOverride] = field(default_factory=dict)

    def as_json(self) -> dict[str, dict[str, float]]:
        """``{model: {rate: number}}`` with only the rates each table gave."""
        return {
            name: {rate: float(value) for rate, value in override.given().items()}
            for name, override in self.models.items()
        }


def parse_overrides(tables: Mapping[str, object], catalog: Catalog | None = None) -> PriceOverrides:
    """``PriceOverrides`` from ``{model: {rate: number}}`` (the config's ``prices`` tables).

    Each table may give any of ``input``, ``cached_input``, ``cache_write_5m``,
    ``cache_write_1h`` and ``output``, in USD per million tokens, each a number not below 0.
    Raises ``PricesError`` listing every table that is not one, every unknown rate (with the
    closest known one) and every bad value; with a ``catalog``, also every name it does not
    list (an addition) that lacks ``input`` or ``output``, which ``Catalog.merged`` would
    refuse.
    """
    problems: list[str] = []
    models: dict[str, PriceOverride] = {}
    for name, table in tables.items():
        where = f"prices.{name!r}"
        if not isinstance(table, Mapping):
            problems.append(f"{where} must be a table, e.g. {{input = 2.5, output = 10}}")
            continue
        before = len(problems)
        for key in table:
            if key not in RATES:
                close = difflib.get_close_matches(str(key), RATES, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                problems.append(f"{where} has no rate {key!r} (rates: {', '.join(RATES)}){hint}")
        models[name] = PriceOverride(**dict(_rates(where, table, problems)))
        incomplete = None if catalog is None else catalog._incomplete(name, models[name])
        if incomplete is not None and len(problems) == before:
            problems.append(incomplete)
    if problems:
        raise PricesError(problems)
    return PriceOverrides(MappingProxyType(models))
