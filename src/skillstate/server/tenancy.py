"""The scope of a request: the tenant whose data it may see (``storage.tenants``).

A tenant's requests may also go upstream with a provider key of its own (``provider_key``).

A request that came with a tenant's virtual key (``guard.CALLER``, not an admin's) has that
tenant as its scope; the token, an admin's key, or no key at all (a gateway without keys) has
none, and sees everything. The management routes (/state, /cost, /metrics, /mcp and the
dashboard that reads them) scope what they read and change by it.
"""

from __future__ import annotations

from aiohttp import web

from skillstate.server.context import GatewayContext
from skillstate.server.guard import caller_of, tenant_of


def scope_of(request: web.Request, gateway: GatewayContext) -> str | None:
    """The tenant whose data ``request`` may see (None: all of it)."""
    return tenant_of(caller_of(request, gateway))


def provider_key(request: web.Request, gateway: GatewayContext, upstream: str) -> str | None:
    """The tenant's own key for ``upstream`` (``tenant_api_keys``) when ``request`` is a
    tenant's and it has one; None: the gateway's."""
    settings = gateway.settings
    if settings is None or not settings.tenant_api_keys:
        return None
    tenant = scope_of(request, gateway)
    return None if tenant is None else settings.tenant_key(tenant, upstream)
