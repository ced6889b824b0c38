"""``skillstate config``: the effective configuration, each value with its source; with
``--init``, a commented config file holding every key at its default."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from skillstate.cli.options import command_flags, load, settings_options
from skillstate.config import describe, describe_json
from skillstate.config.sources import default_config_file
from skillstate.config.template import default_settings, template_path, write_template

_MAX_VALUE_COLUMN = 40

INIT_REFUSED_EXIT = 1


@click.command("config")
@settings_options
@click.option("--json", "as_json", is_flag=True, help='Print JSON: {key: {"value", "source"}}.')
@click.option(
    "--init",
    "init_path",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[PATH]",
    help="Write a commented config file with every key at its default, and stop; PATH: "
    "--config's, else $SKILLSTATE_CONFIG, else ~/.config/skillstate/config.toml. "
    "An existing file is never overwritten.",
)
def config_command(as_json: bool, init_path: str | None, **params: Any) -> None:
    """Print the effective configuration: each key, its value and where it came from.

    Secrets are masked. The flags are the gateway's, so this shows what `skillstate` with the
    same flags would run with.
    """
    flags = command_flags(params)
    if init_path is not None:
        _init(init_path or flags.config_path)
        return
    settings = load(flags)
    if as_json:
        click.echo(json.dumps(describe_json(settings), indent=2))
        return
    rows = describe(settings)
    key_width = max(len(key) for key, _, _ in rows)
    value_width = min(max(len(value) for _, value, _ in rows), _MAX_VALUE_COLUMN)
    for key, value, source in rows:
        click.echo(f"{key:<{key_width}}  {value:<{value_width}}  {source}")


def _init(given: str | None) -> None:
    """Write the template where ``--init`` says, from the defaults alone: what the environment
    or a file sets is not a default."""
    path = template_path(given)
    try:
        write_template(path, default_settings())
    except FileExistsError:
        click.echo(f"{path} exists; not overwritten (move it away to write a fresh one)", err=True)
        raise click.exceptions.Exit(INIT_REFUSED_EXIT) from None
    except OSError as exc:
        click.echo(f"cannot write {path}: {exc.strerror or exc}", err=True)
        raise click.exceptions.Exit(INIT_REFUSED_EXIT) from None
    click.echo(f"wrote {path}")
    if path == default_config_file(os.environ):
        click.echo("skillstate reads it from there; `skillstate config` shows what it sets")
    else:
        click.echo(f"skillstate reads it with --config {path} or SKILLSTATE_CONFIG={path}")
