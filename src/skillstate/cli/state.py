"""``skillstate state``: the sessions a running gateway keeps, through its state routes.

``list``, ``show ID``, ``reset ID`` and ``collapse ID`` each make one HTTP request to the
gateway's ``/state`` routes (see ``server.state_routes``): the gateway owns the stores, so the
CLI never opens them itself and cannot race a running gateway. The gateway is found at
``--url``, else at the ``host`` and ``port`` of the settings (the same config file,
environment and flags as ``skillstate`` itself: ``http://127.0.0.1:8789`` by default).
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click

from skillstate import jsonio
from skillstate.cli.options import Flags, load
from skillstate.config import Settings

F = TypeVar("F", bound=Callable[..., Any])

TIMEOUT_S = 10.0
"""How long one request to the gateway may take: these routes only read or write the store."""

_COLUMNS = ("SESSION", "STEP", "VERSION", "STATE", "LAST SEEN")


@dataclass(frozen=True, slots=True)
class Answer:
    """The gateway's answer to one request: HTTP status and JSON body."""

    status: int
    body: Any


def gateway_url(settings: Settings) -> str:
    """Where a gateway run with ``settings`` listens; a wildcard address is reached on the
    loopback address of its family."""
    host = settings.host
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"http://{host}:{settings.port}"
    if address.is_unspecified:
        address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
    shown = f"[{address}]" if address.version == 6 else str(address)
    return f"http://{shown}:{settings.port}"


def _check_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise click.BadParameter(f"{value!r} is not an http:// URL (http://127.0.0.1:8789)")
    return value.rstrip("/")


def _client_options(command: F) -> F:
    command = click.option(
        "--json", "as_json", is_flag=True, help="Print the gateway's JSON answer as it is."
    )(command)
    return click.option(
        "--url",
        metavar="URL",
        callback=_check_url,
        help="The gateway [from the settings' host and port: http://127.0.0.1:8789].",
    )(command)


@click.group("state")
def state_command() -> None:
    """Inspect and manage the sessions a running gateway keeps: Σ, epochs, archive refs."""


@state_command.command("list")
@_client_options
def list_command(url: str | None, as_json: bool) -> None:
    """List the sessions with a state, most recently seen first."""
    body = _request("GET", url)
    if as_json:
        _print_json(body)
        return
    sessions = body.get("sessions", [])
    if not sessions:
        click.echo("no sessions")
        return
    rows = [_COLUMNS, *(_row(line) for line in sessions)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    for row in rows:
        cells = [
            cell.ljust(width) if i in (0, 4) else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        click.echo("  ".join(cells).rstrip())


@state_command.command("show")
@click.argument("session")
@_client_options
def show_command(session: str, url: str | None, as_json: bool) -> None:
    """Show SESSION: Σ, its step, the last request's context and window, the per-turn index,
    the epoch and the archive refs."""
    body = _request("GET", url, session)
    if as_json:
        _print_json(body)
    else:
        click.echo(json.dumps(body, indent=2, ensure_ascii=False))


@state_command.command("reset")
@click.argument("session")
@_client_options
def reset_command(session: str, url: str | None, as_json: bool) -> None:
    """Forget SESSION's Σ, its epoch and its archive index; its next request starts afresh."""
    body = _request("DELETE", url, session)
    if as_json:
        _print_json(body)
        return
    count = int(body.get("archive_entries_forgotten", 0))
    entries = "1 archive entry" if count == 1 else f"{count} archive entries"
    click.echo(f"session {session} reset: Σ, its epoch and {entries} forgotten")


@state_command.command("collapse")
@click.argument("session")
@_client_options
def collapse_command(session: str, url: str | None, as_json: bool) -> None:
    """Force an epoch boundary on SESSION's next request."""
    body = _request("POST", url, session, path="/state/collapse")
    if as_json:
        _print_json(body)
    else:
        click.echo(f"session {session}: collapse forced on its next request")


def _request(
    method: str, url: str | None, session: str | None = None, *, path: str = "/state"
) -> Any:
    """The body of a successful answer; any failure ends the command with its reason.

    aiohttp is imported here, not at the top, so that ``skillstate --help`` stays fast."""
    import aiohttp

    settings = load(_outer_flags())
    base = url or gateway_url(settings)
    token = settings.auth_token.get_secret_value() if settings.auth_token else None
    try:
        answer = asyncio.run(_send(method, base + path, session, token))
    except aiohttp.ClientConnectorError:
        raise click.ClickException(f"no gateway at {base}: start it with `skillstate`") from None
    except TimeoutError:
        raise click.ClickException(
            f"the gateway at {base} did not answer in {TIMEOUT_S:g} s"
        ) from None
    except aiohttp.ClientError as exc:
        raise click.ClickException(f"talking to {base} failed: {exc}") from None
    if answer.status >= 400:
        raise click.ClickException(_error_text(answer, base))
    if not isinstance(answer.body, dict):
        raise click.ClickException(f"{base} did not answer as a skillstate gateway does")
    return answer.body


async def _send(method: str, url: str, session: str | None, token: str | None) -> Answer:
    import aiohttp

    params = {} if session is None else {"session": session}
    # The gateway's own token (SKILLSTATE_AUTH_TOKEN), where it wants one.
    headers = {} if token is None else {"x-skillstate-token": token}
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as client:
        async with client.request(method, url, params=params, headers=headers) as reply:
            raw = await reply.read()
    try:
        body = jsonio.loads(raw) if raw else None
    except ValueError:
        body = None
    return Answer(reply.status, body)


def _error_text(answer: Answer, base: str) -> str:
    error = answer.body.get("error") if isinstance(answer.body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if isinstance(message, str) and message:
        return message
    return f"{base} answered HTTP {answer.status}: is it a skillstate gateway?"


def _outer_flags() -> Flags:
    """The shared flags given before the command name (``skillstate --port 9000 state list``)."""
    return click.get_current_context().find_object(Flags) or Flags()


def _row(line: dict[str, Any]) -> tuple[str, str, str, str, str]:
    return (
        str(line.get("session", "")),
        str(line.get("step", "")),
        str(line.get("version", "")),
        _size(int(line.get("state_bytes", 0))),
        _when(line.get("last_seen")),
    )


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


def _when(seconds: object) -> str:
    """Local time, to the second: the gateway and this command share the machine's clock."""
    if not isinstance(seconds, int | float):
        return "-"
    return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M:%S")


def _print_json(body: Any) -> None:
    click.echo(jsonio.dumps_str(body))
