"""``skillstate mcp``: the MCP server over stdio, for an agent host to spawn (docs/mcp.md)."""

from __future__ import annotations

from typing import Any

import click

from skillstate.cli.options import command_flags, load, settings_options


@click.command("mcp")
@settings_options
def mcp_command(**params: Any) -> None:
    """Serve the archive and the state over MCP on stdin and stdout (stdio transport).

    It opens the stores of the data directory, the same files a running gateway uses.
    stdout carries only the protocol; diagnostics go to stderr."""
    settings = load(command_flags(params))
    # The SDK is imported here so that the other commands never load it.
    import anyio

    from skillstate.mcp.server import log_to_stderr, serve_stdio

    log_to_stderr(settings.verbose)
    try:
        anyio.run(serve_stdio, settings)
    except KeyboardInterrupt:
        raise click.exceptions.Exit(130) from None
