"""Talking to a running gateway from the command line: where it is, one request to it, and
what a failure means in words. The gateway owns the stores, so the commands never open them
themselves and cannot race it."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click

from skillstate.cli.options import Flags, load
from skillstate.config import Settings
from skillstate.support import jsonio

F = TypeVar("F", bound=Callable[..., Any])

TIMEOUT_S = 10.0
"""How long one request to the gateway may take: these routes only read or write the store."""


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


def check_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise click.BadParameter(f"{value!r} is not an http:// URL (http://127.0.0.1:8789)")
    return value.rstrip("/")


def client_options(command: F) -> F:
    command = click.option(
        "--json", "as_json", is_flag=True, help="Print the gateway's JSON answer as it is."
    )(command)
    return click.option(
        "--url",
        metavar="URL",
        callback=check_url,
        help="The gateway [from the settings' host and port: http://127.0.0.1:8789].",
    )(command)


def request(
    method: str, url: str | None, path: str, params: Mapping[str, str] | None = None
) -> Any:
    """The body of a successful answer; any failure ends the command with its reason.

    aiohttp is imported here, not at the top, so that ``skillstate --help`` stays fast."""
    import aiohttp

    settings = load(_outer_flags())
    base = url or gateway_url(settings)
    token = settings.auth_token.get_secret_value() if settings.auth_token else None
    try:
        answer = asyncio.run(_send(method, base + path, dict(params or {}), token))
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


async def _send(method: str, url: str, params: dict[str, str], token: str | None) -> Answer:
    import aiohttp

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


def print_json(body: Any) -> None:
    click.echo(jsonio.dumps_str(body))
