"""``skillstate config``: the effective configuration, each value with its source."""

from __future__ import annotations

import json
from typing import Any

import click

from skillstate.cli.options import command_flags, load, settings_options
from skillstate.config import describe, describe_json

_MAX_VALUE_COLUMN = 40


@click.command("config")
@settings_options
@click.option("--json", "as_json", is_flag=True, help='Print JSON: {key: {"value", "source"}}.')
def config_command(as_json: bool, **params: Any) -> None:
    """Print the effective configuration: each key, its value and where it came from.

    Secrets are masked. The flags are the gateway's, so this shows what `skillstate` with the
    same flags would run with.
    """
    settings = load(command_flags(params))
    if as_json:
        click.echo(json.dumps(describe_json(settings), indent=2))
        return
    rows = describe(settings)
    key_width = max(len(key) for key, _, _ in rows)
    value_width = min(max(len(value) for _, value, _ in rows), _MAX_VALUE_COLUMN)
    for key, value, source in rows:
        click.echo(f"{key:<{key_width}}  {value:<{value_width}}  {source}")
