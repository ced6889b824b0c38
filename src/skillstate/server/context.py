"""What every handler reads from the application: the gateway's parts, built once."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from skillstate.config import Settings
from skillstate.economics.exchange import Observer
from skillstate.economics.ledger.recorder import Recorder
from skillstate.pipeline.lane import Lane
from skillstate.protocols.memo import SessionMemos
from skillstate.server.bodies import Bodies
from skillstate.server.history import ResponseHistory
from skillstate.server.keyring import KeyRing
from skillstate.state.engine import StateEngine
from skillstate.state.mode import Mode
from skillstate.storage.audit import AuditLog
from skillstate.storage.stores import Stores
from skillstate.support.caches import SessionCache
from skillstate.upstream.circuit import Circuit, CircuitPolicy
from skillstate.upstream.client import UpstreamClient
from skillstate.upstream.limits import RateLimit
from skillstate.upstream.retry import RetryPolicy
from skillstate.upstream.routing import Router, Upstream
from skillstate.upstream.shared_limits import SharedRateLimit
from skillstate.upstream.sqlite_windows import Run, SqliteRateLimit

Limit = RateLimit | SharedRateLimit | SqliteRateLimit

if TYPE_CHECKING:  # the route's module reads this one's GATEWAY
    from skillstate.server.budgets import Budgets
    from skillstate.server.mcp_route import McpEndpoint
    from skillstate.server.telemetry import Telemetry


LaneHeaders = tuple[tuple[str, str, tuple[str, ...]], ...]
"""Each lane's request header as the server reads it on every request: the header's name,
the lane's name, the values it accepts (``LaneSpec.header``, flattened once when the gateway
is built: plain tuples are the quickest to walk)."""


@dataclass(slots=True)
class GatewayContext:
    router: Router
    client: UpstreamClient
    max_body_bytes: int = 32 * 1024 * 1024
    max_messages: int = 100_000
    max_parts: int = 200_000
    body_timeout: float = 60.0
    """Seconds a client has to send a request's whole body."""
    observers: list[Observer] = field(default_factory=list)
    engine: StateEngine | None = None
    mode: Mode = Mode.OFF
    subscription_rewrite: bool = False
    """Whether an Anthropic subscription login's requests run the lanes like any other
    (``route.admit``); by default they pass through untouched."""
    untouched_told: SessionCache[bool] = field(
        default_factory=lambda: SessionCache(entries=4096, max_bytes=4096, weigh=lambda _: 1)
    )
    """The sessions whose subscription traffic the log already said passes untouched (once
    each)."""
    lanes: list[Lane] = field(default_factory=list)
    """Every lane the gateway built, in the order a request runs them (``gateway.build_lanes``)."""
    lanes_off: frozenset[str] = frozenset()
    """The lanes of ``lanes`` a request does not run unless it asks for them."""
    lane_headers: LaneHeaders = ()
    """The request headers the lanes of ``lanes`` read (``inbound.request_extra``)."""
    idle_off: frozenset[str] = frozenset()
    """The lanes of ``lanes`` that change nothing in mode off (``LaneSpec.idle_off``): a
    request in mode off that runs no other is relayed undecoded (``server.express``)."""
    idle_passing: frozenset[str] = frozenset()
    """The lanes of ``lanes`` that change nothing in hybrid mode while a session is passed
    through before its first boundary (``LaneSpec.idle_passing``)."""
    history: ResponseHistory | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    first_byte_timeout: float = 300.0
    """Seconds an upstream may take to start its reply (headers) before the call fails."""
    circuit_policy: CircuitPolicy = field(default_factory=CircuitPolicy)
    circuits: dict[str, Circuit] = field(default_factory=dict)
    limits: dict[str, Limit] = field(default_factory=dict)
    recorder: Recorder | None = None
    """Writes the ledger (/cost, /metrics); None: nothing is recorded."""
    memos: SessionMemos = field(default_factory=SessionMemos)
    """Each session's previous messages, decoded (``protocols.memo``)."""
    mcp: McpEndpoint | None = None
    """The MCP server at ``/mcp`` (None: not served)."""
    stores: Stores | None = None
    """Where Σ and the archive are kept (/health reports it)."""
    audit: AuditLog | None = None
    """The audit log of admin actions (``server.audit_routes``); None: nothing is recorded."""
    redis: Any = None
    """The Redis the gateways share (``redis.asyncio``), or None: rate limits and circuits
    are then each process's own, or ``machine``'s."""
    keys: KeyRing | None = None
    """The virtual keys requests are checked against (None: none, the token's rules alone)."""
    budgets: Budgets | None = None
    """The keys' spending and prices (``server.budgets``); None: no key's budget is held."""
    machine: Run | None = None
    """Without Redis, the SQLite file the processes of this machine share (``workers`` > 1):
    rate limits are kept there (``upstream.sqlite_windows``)."""
    settings: Settings | None = None
    """What the gateway was started with (``GET /config`` shows it masked); None: a context
    built without settings (tests)."""
    tenant_keys: bool = False
    """Whether some tenant goes upstream with a provider key of its own (``tenant_api_keys``:
    ``server.tenancy.provider_key``)."""
    telemetry: Telemetry | None = None
    """Where each request's trace and GenAI metrics go (``server.telemetry``); None: tracing
    is off, and the request path does nothing for it."""
    bodies: Bodies = field(default_factory=Bodies)
    """Recent long bodies, charted so that the next one is parsed from its new bytes
    (``splice``)."""

    def circuit(self, upstream: str) -> Circuit:
        """The circuit breaker of ``upstream`` (one per upstream, made on first use)."""
        found = self.circuits.get(upstream)
        if found is None:
            found = Circuit(time.monotonic, self.circuit_policy)
            self.circuits[upstream] = found
        return found

    def limit(self, upstream: Upstream) -> Limit | None:
        """The rate limit of ``upstream`` (None when it has none): shared by every gateway on
        the same Redis where one is set, else by the processes of this machine where there
        are several."""
        if upstream.rpm is None and upstream.tpm is None:
            return None
        return self.window(upstream.name, upstream.rpm, upstream.tpm, kept=upstream.name)

    def window(self, name: str, rpm: int | None, tpm: int | None, *, kept: str = "") -> Limit:
        """The rate limit ``name`` of ``rpm`` and ``tpm`` (made on first use, kept under
        ``kept``: by default the name and the figures, so that new figures start a new
        window), of the kind ``limit`` says."""
        kept = kept or f"{name}/{rpm}/{tpm}"
        found = self.limits.get(kept)
        if found is None:
            found = RateLimit(time.monotonic, rpm=rpm, tpm=tpm)
            if self.redis is not None:
                found = SharedRateLimit(self.redis, name, found)
            elif self.machine is not None:
                found = SqliteRateLimit(self.machine, name, found)
            self.limits[kept] = found
        return found


GATEWAY: web.AppKey[GatewayContext] = web.AppKey("gateway", GatewayContext)
