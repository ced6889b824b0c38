"""The checks that reach over the network: the gateway on its configured address, and each
upstream's base URL. Every request has a short timeout; the upstream probe sends no
credential, and any HTTP answer (a 401 or a 404 too) counts as reachable.

The upstreams checked are the running gateway's when one answers on the configured address
(its ``GET /config``, ``server.config_route``): a gateway started with ``--upstream URL`` is
checked for that URL even when ``doctor`` is run without the flag. Only when none answers are
this command's own settings checked; each line says which it read."""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass, replace
from typing import Any

import aiohttp

from skillstate import __version__
from skillstate.cli.client import gateway_url
from skillstate.cli.doctor.check import Check
from skillstate.config import Settings, UpstreamSettings
from skillstate.support import jsonio

GATEWAY_TIMEOUT_S = 2.0
UPSTREAM_TIMEOUT_S = 5.0
TOKEN_HEADER = "x-skillstate-token"
CONFIG_PATH = "/config"
"""The gateway's configuration route (``server.config_route``; not imported: doctor starts
without the server's modules)."""


def start_command(settings: Settings, config_path: str | None = None) -> str:
    """The command that starts a gateway where ``settings`` look for one (with the config file
    ``doctor`` was given, if any)."""
    words = ["skillstate", "serve"]
    if config_path is not None:
        words += ["--config", shlex.quote(config_path)]
    defaults = Settings.model_fields
    if settings.host != defaults["host"].default:
        words += ["--host", shlex.quote(settings.host)]
    if settings.port != defaults["port"].default:
        words += ["--port", str(settings.port)]
    return " ".join(words)


async def check_gateway(settings: Settings, config_path: str | None = None) -> Check:
    """Whether a skillstate gateway answers ``GET /`` on the configured address, and whether
    its version is the installed one."""
    url = gateway_url(settings)
    headers = _token_headers(settings)
    timeout = aiohttp.ClientTimeout(total=GATEWAY_TIMEOUT_S)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url + "/", headers=headers, allow_redirects=False) as reply,
        ):
            status = reply.status
            body = _json_or_none(await reply.read()) if status == 200 else None
    except (TimeoutError, aiohttp.ClientError) as exc:
        detail = f"nothing answers on {url} ({_reason(exc)})"
        return Check("gateway", False, detail, start_command(settings, config_path))
    return _gateway_answer(start_command(settings, config_path), url, status, body)


def _json_or_none(raw: bytes) -> object:
    try:
        return jsonio.loads(raw)
    except ValueError:
        return None


def _gateway_answer(start: str, url: str, status: int, body: object) -> Check:
    if status in (401, 403):
        fix = "set SKILLSTATE_AUTH_TOKEN to the gateway's token"
        return Check("gateway", False, f"{url} refuses our token (HTTP {status})", fix)
    if not isinstance(body, dict) or body.get("name") != "skillstate":
        detail = f"{url} answers (HTTP {status}) but is not a skillstate gateway"
        return Check("gateway", False, detail, f"{start} --port <another>")
    version = body.get("version")
    if version != __version__:
        detail = f"{url} runs skillstate {version}; {__version__} is installed"
        return Check("gateway", False, detail, f"restart the gateway: {start}")
    return Check("gateway", True, f"{url} runs skillstate {version}")


async def check_circuits(settings: Settings) -> Check:
    """The state of each upstream's circuit in the running gateway (its ``/health``): a
    problem while one is open (the gateway reroutes or sends anyway, but the upstream fails),
    information when no gateway answers."""
    url = gateway_url(settings)
    headers = _token_headers(settings)
    timeout = aiohttp.ClientTimeout(total=GATEWAY_TIMEOUT_S + UPSTREAM_TIMEOUT_S)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url + "/health", headers=headers, allow_redirects=False) as reply,
        ):
            body = _json_or_none(await reply.read()) if reply.status == 200 else None
    except (TimeoutError, aiohttp.ClientError) as exc:
        return Check("circuits", None, f"no gateway to ask ({_reason(exc)})")
    upstreams = body.get("upstreams") if isinstance(body, dict) else None
    if not isinstance(upstreams, list):
        return Check("circuits", None, f"{url}/health does not say")
    return circuits_check(upstreams)


def circuits_check(upstreams: list[object]) -> Check:
    """One line for every upstream's circuit, from ``/health``'s ``upstreams``."""
    states = []
    opened = []
    for entry in upstreams:
        if not isinstance(entry, dict):
            continue
        name, state = entry.get("name"), entry.get("circuit", "unknown")
        window = entry.get("circuit_window")
        shown = f"{name} {state}"
        if isinstance(window, dict):
            shown += f" ({window.get('failed')}/{window.get('calls')} failed"
            if state == "degraded":
                shown += f", {window.get('failed_tries')}/{window.get('tries')} tries"
            if state == "open":
                shown += f", trials in {window.get('retry_in_s')}s"
            shown += ")"
        states.append(shown)
        if state in ("open", "degraded"):
            opened.append(str(name))
    detail = "; ".join(states) or "no upstream"
    if opened:
        fix = f"upstream(s) {', '.join(opened)} failing: check the provider, or add fallbacks"
        return Check("circuits", False, detail, fix)
    return Check("circuits", True, detail)


@dataclass(frozen=True, slots=True)
class UpstreamFacts:
    """What the upstream checks say of one upstream, wherever it was read: the running
    gateway's ``GET /config`` or this command's own settings."""

    name: str
    base_url: str
    wire: str
    profile: str
    profile_set: bool | None
    """Set rather than detected from the base URL (None: not known)."""
    retries_first_byte_timeout: bool
    key: str
    """Where its key comes from, in words."""
    circuit: str | None = None
    """Its circuit's state in the running gateway (None: no gateway was asked)."""

    @classmethod
    def of_settings(cls, upstream: UpstreamSettings) -> UpstreamFacts:
        return cls(
            upstream.name,
            upstream.base_url,
            upstream.wire,
            str(upstream.resolved_profile),
            upstream.profile != "auto",
            upstream.retries_first_byte_timeout,
            _key_source(upstream.api_key is not None, upstream.api_key_env),
        )

    @classmethod
    def of_gateway(cls, entry: dict[str, Any]) -> UpstreamFacts:
        """From one entry of ``GET /config``'s ``upstreams`` (``server.config_route``)."""
        key_env = entry.get("api_key_env")
        return cls(
            str(entry.get("name")),
            str(entry.get("base_url")),
            str(entry.get("wire", "auto")),
            str(entry.get("profile")),
            entry.get("profile_set") if isinstance(entry.get("profile_set"), bool) else None,
            entry.get("retry_first_byte_timeout") is not False,
            _key_source(entry.get("api_key") is not None, key_env if key_env else None),
            str(entry.get("circuit", "unknown")),
        )


@dataclass(frozen=True, slots=True)
class Running:
    """The upstreams of the gateway that answered ``GET /config`` at ``url``."""

    url: str
    upstreams: list[UpstreamFacts]


async def running_upstreams(settings: Settings) -> Running | str:
    """The upstreams of the gateway on the configured address (its ``GET /config``), or why
    none were told: nothing listens, it refuses our token, or it is no skillstate gateway (or a
    version without the route)."""
    url = gateway_url(settings)
    timeout = aiohttp.ClientTimeout(total=GATEWAY_TIMEOUT_S)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(
                url + CONFIG_PATH, headers=_token_headers(settings), allow_redirects=False
            ) as reply,
        ):
            status = reply.status
            body = _json_or_none(await reply.read()) if status == 200 else None
    except (TimeoutError, aiohttp.ClientError):
        return f"no gateway answers on {url}"
    if status in (401, 403):
        return f"the gateway on {url} refuses our token"
    entries = body.get("upstreams") if isinstance(body, dict) else None
    if (
        not isinstance(body, dict)
        or body.get("name") != "skillstate"
        or not isinstance(entries, list)
    ):
        return f"{url} does not tell its configuration (HTTP {status})"
    facts = [UpstreamFacts.of_gateway(entry) for entry in entries if isinstance(entry, dict)]
    return Running(url, facts)


async def check_upstreams(settings: Settings) -> list[Check]:
    """One check per upstream, run together: those of the gateway running on the configured
    address when one answers (what it routes to is what matters), else those this command's
    settings configure, saying why. A problem when there is none."""
    running = await running_upstreams(settings)
    if isinstance(running, Running):
        source = f"the running gateway at {running.url}"
        upstreams = running.upstreams
    else:
        source = f"this command's settings ({running})"
        upstreams = [UpstreamFacts.of_settings(up) for up in settings.resolved_upstreams()]
    if not upstreams:
        fix = "skillstate --upstream https://api.openai.com/v1 (or skillstate config --init)"
        return [Check("upstream", False, f"no upstream is configured in {source}", fix)]
    checks = await asyncio.gather(*(check_upstream(upstream) for upstream in upstreams))
    return [replace(check, detail=f"{check.detail}; from {source}") for check in checks]


async def check_upstream(upstream: UpstreamFacts) -> Check:
    """Whether ``upstream``'s base URL gives any HTTP answer to a bare ``GET`` (no credential
    is sent), and, read from a running gateway, whether its circuit lets calls through."""
    name = f"upstream {upstream.name}"
    timeout = aiohttp.ClientTimeout(total=UPSTREAM_TIMEOUT_S)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(upstream.base_url, allow_redirects=False) as reply,
        ):
            status = reply.status
    except (TimeoutError, aiohttp.ClientError) as exc:
        detail = f"{upstream.base_url} is unreachable ({_reason(exc)})"
        return Check(name, False, detail + _notes(upstream), _upstream_fix(upstream))
    detail = f"{upstream.base_url} answers (HTTP {status}); {upstream.key}{_notes(upstream)}"
    if upstream.circuit == "open":
        fix = f"the gateway stopped calling {upstream.name}: check the provider, or add fallbacks"
        return Check(name, False, detail, fix)
    return Check(name, True, detail)


def _upstream_fix(upstream: UpstreamFacts) -> str:
    return f"check the network, or the base URL: curl -sI {upstream.base_url}"


def _key_source(has_key: bool, key_env: str | None) -> str:
    if has_key:
        return f"key from {key_env or 'SKILLSTATE_API_KEY'}"
    return "the client's own key is forwarded"


def _notes(upstream: UpstreamFacts) -> str:
    """Its profile (docs/upstreams.md) and whether it was detected from the base URL; its
    wire when it is not the client's own; its circuit in the running gateway."""
    how = {True: " (set)", False: " (detected)", None: ""}[upstream.profile_set]
    note = f"; profile {upstream.profile}{how}"
    if not upstream.retries_first_byte_timeout:
        note += ", first-byte timeouts not retried"
    if upstream.wire != "auto":
        note += f"; wire {upstream.wire}"
    if upstream.circuit is not None:
        note += f"; circuit {upstream.circuit}"
    return note


def _token_headers(settings: Settings) -> dict[str, str]:
    if settings.auth_token is None:
        return {}
    return {TOKEN_HEADER: settings.auth_token.get_secret_value()}


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return exc.os_error.strerror or str(exc.os_error)
    return str(exc) or type(exc).__name__
