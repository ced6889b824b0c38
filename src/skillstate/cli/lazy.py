"""A command group whose commands are imported when they are run: ``skillstate shell``, which
an agent's hook runs for every command it rewrites, does not pay for importing the bench, and
``skillstate --help`` lists every command without importing any of them."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass

import click


@dataclass(frozen=True, slots=True)
class Lazy:
    """One command of a ``LazyGroup``: where it lives, and its short help."""

    target: str
    """``"module:attribute"``, imported on the command's first use."""
    summary: str
    """The command's own short help (``get_short_help_str`` without a limit), which the group's
    ``--help`` lists so that it imports no command; a test keeps the two equal."""


class LazyGroup(click.Group):
    """``lazy`` maps each command's name to its ``Lazy``, imported on first use."""

    def __init__(
        self, *args: object, lazy: Mapping[str, Lazy] | None = None, **kwargs: object
    ) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            target = self.lazy[cmd_name].target
            module, _, attribute = target.partition(":")
            command = getattr(importlib.import_module(module), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{target} is not a click command")
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their short help, as ``click.Group`` lists them, but a command not
        yet imported is listed from its ``Lazy.summary``, shortened to the width as click
        shortens a command's own help."""
        commands = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name)
            if command is None and name in self.lazy:
                command = click.Command(name, help=self.lazy[name].summary)
            if command is not None and not command.hidden:
                commands.append((name, command))
        if not commands:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in commands)
        rows = [(name, command.get_short_help_str(limit)) for name, command in commands]
        with formatter.section("Commands"):
            formatter.write_dl(rows)
