"""The checks that reach over the network: the gateway on its configured address, and each
upstream's base URL. Every request has a short timeout; the upstream probe sends no
credential, and any HTTP answer (a 401 or a 404 too) counts as reachable."""

from __future__ import annotations

import asyncio
import shlex

import aiohttp

from skillstate import __version__
from skillstate.cli.client import gateway_url
from skillstate.cli.doctor.check import Check
from skillstate.config import Settings, UpstreamSettings
from skillstate.support import jsonio

GATEWAY_TIMEOUT_S = 2.0
UPSTREAM_TIMEOUT_S = 5.0
TOKEN_HEADER = "x-skillstate-token"


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
    headers = {}
    if settings.auth_token is not None:
        headers[TOKEN_HEADER] = settings.auth_token.get_secret_value()
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
    headers = {}
    if settings.auth_token is not None:
        headers[TOKEN_HEADER] = settings.auth_token.get_secret_value()
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


async def check_upstreams(settings: Settings) -> list[Check]:
    """One check per configured upstream, run together; a problem when none is configured."""
    upstreams = settings.resolved_upstreams()
    if not upstreams:
        fix = "skillstate --upstream https://api.openai.com/v1 (or skillstate config --init)"
        return [Check("upstream", False, "no upstream is configured", fix)]
    return list(await asyncio.gather(*(check_upstream(upstream) for upstream in upstreams)))


async def check_upstream(upstream: UpstreamSettings) -> Check:
    """Whether ``upstream``'s base URL gives any HTTP answer to a bare ``GET``."""
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
        return Check(name, False, detail + _profile_note(upstream), _upstream_fix(upstream))
    detail = f"{upstream.base_url} answers (HTTP {status}){_key_note(upstream)}"
    return Check(name, True, detail + _profile_note(upstream))


def _upstream_fix(upstream: UpstreamSettings) -> str:
    return f"check the network, or the base URL: curl -sI {upstream.base_url}"


def _key_note(upstream: UpstreamSettings) -> str:
    if upstream.api_key is not None:
        source = upstream.api_key_env or "SKILLSTATE_API_KEY"
        return f"; key from {source}"
    return "; the client's own key is forwarded"


def _profile_note(upstream: UpstreamSettings) -> str:
    """Its profile (docs/upstreams.md), and whether it was detected from the base URL."""
    how = "detected" if upstream.profile == "auto" else "set"
    note = f"; profile {upstream.resolved_profile} ({how})"
    if not upstream.retries_first_byte_timeout:
        note += ", first-byte timeouts not retried"
    return note


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return exc.os_error.strerror or str(exc.os_error)
    return str(exc) or type(exc).__name__
