"""The flags every command shares, and turning them into ``Settings``.

Flags pass their text to ``load_settings`` unparsed, so that a bad flag is reported the way a
bad environment variable or file key is: ``port='x' from command line --port: not an integer``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from skillstate.config import Settings

F = TypeVar("F", bound=Callable[..., Any])

CONFIG_ERROR_EXIT = 2

SHOWN_DEFAULTS: dict[str, object] = {"host": "127.0.0.1", "port": 8789, "mode": "hybrid"}
"""The defaults the flags' help shows, written here so that ``skillstate --help`` does not
import the settings (pydantic and every part the settings read); tests/cli/test_main.py keeps
them equal to ``Settings``' own."""

_LANES_HELP = "Only these lanes run, comma separated; none: no lane"


def lanes_help() -> str:
    """``--lanes``' help: every lane in order, and which are on by default, from the settings'
    own default (imports the settings and every lane)."""
    from skillstate.config import Settings
    from skillstate.pipeline.switches import names

    switches = Settings.model_fields["lanes"].get_default(call_default_factory=True)
    on = [name for name in names() if switches.enabled(name)]
    off = [name for name in names() if not switches.enabled(name)]
    return f"{_LANES_HELP} [on by default: {','.join(on)}; off: {','.join(off)}]."


class _LanesOption(click.Option):
    """``--lanes``, whose help names every lane and which are on by default: read when the help
    is shown, not when a command is imported (the lanes' modules take a tenth of a second to
    import, ``pipeline.switches.lineup``). ``listed=False`` (the bare group's) points to
    ``skillstate serve --help`` instead, so that ``skillstate --help`` imports no lane."""

    def __init__(self, *args: Any, listed: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.listed = listed

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        if self.listed:
            self.help = lanes_help()
        else:
            self.help = f"{_LANES_HELP}; `skillstate serve --help` lists them and which are on."
        return super().get_help_record(ctx)


def _add_options(command: F, *, list_lanes: bool) -> F:
    """``command`` with the shared flags; ``list_lanes``: ``--lanes``' help lists the lanes."""
    options = (
        click.option("--config", "config_path", metavar="FILE", help="TOML config file."),
        click.option("--upstream", metavar="URL", help="Provider base URL, with or without /v1."),
        click.option(
            "--upstream-wire",
            metavar="WIRE",
            help="auto (the client's own), openai-chat, openai-responses or anthropic-messages.",
        ),
        click.option(
            "--upstream-profile",
            metavar="PROFILE",
            help="openai (the wire's own provider) or compatible (llama.cpp, vLLM, Ollama...); "
            "auto: from the URL.",
        ),
        click.option(
            "--host", metavar="HOST", help=f"Address to listen on [{SHOWN_DEFAULTS['host']}]."
        ),
        click.option(
            "--port", metavar="PORT", help=f"Port to listen on [{SHOWN_DEFAULTS['port']}]."
        ),
        click.option(
            "--mode",
            metavar="MODE",
            help=f"State mode: paper, hybrid or off [{SHOWN_DEFAULTS['mode']}].",
        ),
        click.option("--schema", metavar="KEYS", help="State keys, comma separated: step,notes."),
        click.option("--lanes", metavar="LANES", cls=_LanesOption, listed=list_lanes),
        click.option("--data-dir", metavar="DIR", help="Where sessions and the archive are kept."),
        click.option(
            "--store",
            metavar="URL",
            help="Σ and the archive in PostgreSQL (postgresql://...) instead of SQLite.",
        ),
        click.option(
            "--workers",
            metavar="N",
            help="Processes serving the port together (SO_REUSEPORT), each restarted if it dies.",
        ),
        click.option(
            "--redis",
            metavar="URL",
            help="A Redis the gateways share (redis://...): rate limits across all of them.",
        ),
        click.option(
            "--otel-endpoint",
            metavar="URL",
            help="Send OpenTelemetry traces and metrics there (OTLP/HTTP, e.g. :4318).",
        ),
        click.option("-v", "--verbose", is_flag=True, default=None, help="Log more."),
    )
    for option in reversed(options):
        command = option(command)
    return command


def settings_options(command: F) -> F:
    """Add the shared flags to a command; they arrive as keyword arguments."""
    return _add_options(command, list_lanes=True)


def group_options(command: F) -> F:
    """The shared flags of the bare ``skillstate`` group, whose ``--help`` imports neither the
    settings nor the lanes."""
    return _add_options(command, list_lanes=False)


@dataclass(frozen=True, slots=True)
class Flags:
    """The shared flags one command got: ``values`` by settings key, ``None`` when left out."""

    config_path: str | None = None
    values: dict[str, object] = field(default_factory=dict)

    @classmethod
    def of(cls, params: dict[str, Any]) -> Flags:
        """The shared flags from the keyword arguments ``settings_options`` added."""
        values = dict(params)
        return cls(values.pop("config_path"), values)

    def over(self, outer: Flags | None) -> Flags:
        """These flags, falling back to the ones given before the command name."""
        if outer is None:
            return self
        given = {key: value for key, value in self.values.items() if value is not None}
        config_path = outer.config_path if self.config_path is None else self.config_path
        return Flags(config_path, {**outer.values, **given})


def command_flags(params: dict[str, Any]) -> Flags:
    """This command's flags over the group's (``skillstate --port 1 config``)."""
    outer = click.get_current_context().find_object(Flags)
    return Flags.of(params).over(outer)


def load(flags: Flags) -> Settings:
    """Settings for these flags; on a config error, print each problem and exit with 2."""
    from skillstate.config import ConfigError, load_settings

    try:
        return load_settings(cli=flags.values, config_path=flags.config_path)
    except ConfigError as exc:
        for problem in exc.problems:
            click.echo(f"config error: {problem}", err=True)
        raise click.exceptions.Exit(CONFIG_ERROR_EXIT) from None
