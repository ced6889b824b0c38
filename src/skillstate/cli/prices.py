"""``skillstate prices``: the price catalog usage is priced with, the config's tables included."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from skillstate.cli.options import command_flags, load, settings_options
from skillstate.economics.catalog_age import catalog_age
from skillstate.economics.prices import Catalog, Price, builtin_catalog

_MISSING = "-"
_WIDEST = 10_000


@click.command("prices")
@settings_options
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print JSON: {"as_of", "currency", "unit", "models": [{"model", "input", ...}], '
    '"catalog": {"date", "age_days", "stale"}}.',
)
def prices_command(as_json: bool, **params: Any) -> None:
    """Print the price catalog: each model's rates in USD per million tokens.

    \b
    Rates: input (not read from the cache), cached input (read from it), cache
    writes with the 5-minute and the 1-hour TTL where the provider bills them
    (elsewhere a write costs what input costs), and output (reasoning included).

    The figures are the providers' list prices as known on the catalog's date, from
    the pricing pages it names. They are not updated by themselves: correct or add a
    model with a [prices."model-name"] table in the config file; such models are
    marked. Dated snapshots and aliases are priced as their model
    (gpt-4o-2024-08-06 as gpt-4o). A model not listed has no price: its usage is
    counted as unpriced, never as free. A catalog older than six months is
    named stale, with a warning.
    """
    settings = load(command_flags(params))
    listed = builtin_catalog()
    catalog = listed.merged(settings.prices, source=settings.sources["prices"])
    age = catalog_age(listed.as_of, datetime.date.today())
    if as_json:
        click.echo(json.dumps({**catalog.as_json(), "catalog": age.as_json()}, indent=2))
        return
    console = Console(highlight=False)
    table = _table(catalog, listed)
    if not console.is_terminal:
        # Into a pipe or a file: as wide as the table is, so that no name or figure is cut.
        unbounded = console.options.update_width(_WIDEST)
        console.width = max(console.width, Measurement.get(console, unbounded, table).maximum)
    console.print(table)
    for provider, url in catalog.sources.items():
        console.print(f"{provider}: {url}", soft_wrap=True)
    if settings.prices.models:
        console.print(f"override, added: from {settings.sources['prices']}", soft_wrap=True)
    warning = age.warning()
    if warning is not None:
        console.print(f"[yellow]warning[/yellow]: {escape(warning)}", soft_wrap=True)


def _table(catalog: Catalog, listed: Catalog) -> Table:
    table = Table(
        title=f"USD per million tokens, list prices as of {catalog.as_of.isoformat()}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("model", no_wrap=True)
    for heading in ("input", "cached", "write 5m", "write 1h", "output"):
        table.add_column(heading, justify="right", no_wrap=True)
    table.add_column("note", no_wrap=True)
    for name, price in catalog.prices.items():
        note = "" if not price.overridden else "override" if name in listed.prices else "added"
        table.add_row(name, *_rates(price), note)
    return table


def _rates(price: Price) -> list[str]:
    rates = (price.input, price.cached_input, price.cache_write_5m, price.cache_write_1h)
    return [_amount(rate) for rate in (*rates, price.output)]


def _amount(rate: Decimal | None) -> str:
    """``2.50``, ``0.075``: at least cents, and every digit the figure has."""
    if rate is None:
        return _MISSING
    return f"{rate:.2f}" if rate == rate.quantize(Decimal("0.01")) else f"{rate.normalize():f}"
