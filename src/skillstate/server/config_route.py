"""``GET /config``: the running gateway's effective configuration and its upstreams, read-only,
for ``skillstate doctor`` (which checks the gateway it reaches, not its own flags) and anyone
asking what this gateway was started with.

The answer::

    {"name": "skillstate", "version": "...",
     "upstreams": [{"name", "base_url", "wire", "models", "profile", "profile_set",
                    "retry_first_byte_timeout", "api_key", "api_key_env", "headers",
                    "fallbacks", "circuit", "circuit_window"}, ...],
     "config": {key: {"value", "source"}, ...}}

``upstreams`` are those the gateway routes to, in its routing order: ``wire`` is ``auto``
where the upstream speaks the client's own wire, ``api_key`` is masked as ``skillstate config``
masks it (``sk-…abcd``, ``(set)`` for a short one, null when none is set; ``api_key_env``
the variable it came from, if one), ``profile_set`` whether the profile was set rather than
detected from the base URL (null: not known), ``headers`` are
names only (providers take credentials in headers too), and ``circuit`` with
``circuit_window`` is the breaker's state as ``/health`` reports it (no upstream is called).
``config`` is ``skillstate config --json``'s report of the settings, secrets masked the same
way (the token included); empty for a gateway built without settings.

Like every route it passes ``server.guard`` first: the token when one is set, and the Host and
Origin checks.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from skillstate import __version__
from skillstate.config import UpstreamSettings, describe_json, mask_secret
from skillstate.server.context import GATEWAY, GatewayContext
from skillstate.server.info import circuit_report
from skillstate.server.local_answers import answered
from skillstate.support import jsonio
from skillstate.upstream.routing import Upstream

CONFIG_PATH = "/config"


async def gateway_config(request: web.Request) -> web.Response:
    gateway = request.app[GATEWAY]
    settings = gateway.settings
    tables = {up.name: up for up in settings.resolved_upstreams()} if settings else {}
    body = {
        "name": "skillstate",
        "version": __version__,
        "upstreams": [
            _upstream(gateway, up, tables.get(up.name)) for up in gateway.router.upstreams
        ],
        "config": describe_json(settings) if settings is not None else {},
    }
    out = web.Response(body=jsonio.dumps(body), content_type="application/json")
    return answered(request, out, "config")


def _upstream(
    gateway: GatewayContext, upstream: Upstream, table: UpstreamSettings | None
) -> dict[str, Any]:
    return {
        "name": upstream.name,
        "base_url": upstream.base_url,
        "wire": upstream.wire.value if upstream.wire else "auto",
        "models": list(upstream.models),
        "profile": upstream.profile.value,
        "profile_set": None if table is None else table.profile != "auto",
        "retry_first_byte_timeout": upstream.retry_first_byte_timeout,
        "api_key": None if upstream.api_key is None else mask_secret(upstream.api_key),
        "api_key_env": None if table is None else table.api_key_env,
        "headers": sorted(name for name, _ in upstream.headers),
        "fallbacks": list(upstream.fallbacks),
        **circuit_report(gateway, upstream.name),
    }
