"""GET /metrics: the ledger's figures as Prometheus counters and histograms, on a registry of
the gateway's own (two gateways in one process never share one).

A tenant's sessions (``<tenant>/<id>``, see ``server.tenancy``) are also counted by tenant, in
``skillstate_tenant_requests``, ``skillstate_tenant_tokens`` and ``skillstate_tenant_cost_usd``
(a registry apart): ``tenant_text`` is what a tenant's key is shown, its own series only."""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from skillstate.economics.ledger.row import LOCAL, SUBSCRIPTION, Row

ACTIVE_WINDOW = 900.0
"""A session is active while its last request is at most this many seconds old."""
SEEN_SESSIONS = 65_536
"""The most sessions the active gauge keeps a time for."""

CIRCUIT_STATES = ("closed", "degraded", "open", "half-open")
"""The states of an upstream's circuit (``upstream.circuit.Circuit.status``), as the gauge
labels them."""

_TOKEN_KINDS = ("input", "cached_input", "cache_write", "output", "reasoning")
"""The usage a row counts in ``skillstate_tokens_total``, by kind."""

_KINDS = {429: "rate_limit", 502: "bad_gateway", 503: "unavailable", 504: "timeout"}


def _error_kind(status: int) -> str:
    if status in _KINDS:
        return _KINDS[status]
    return "server" if status >= 500 else "client"


class Metrics:
    """The gateway's metrics; ``row`` counts one ledger row."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "skillstate_requests",
            "Upstream requests",
            ["client_wire", "upstream", "status"],
            registry=r,
        )
        self.tokens = Counter("skillstate_tokens", "Tokens, by kind", ["kind"], registry=r)
        self.cost = Counter("skillstate_cost_usd", "Cost in USD, by kind", ["kind"], registry=r)
        self.unpriced = Counter(
            "skillstate_unpriced_requests",
            "Upstream requests of a model without a price",
            registry=r,
        )
        self.subscription = Counter(
            "skillstate_subscription_requests",
            "Upstream requests billed by an Anthropic subscription login (no per-token price)",
            registry=r,
        )
        self.estimated = Counter(
            "skillstate_estimated_requests",
            "Upstream requests whose provider reported no usage, counted by the gateway",
            registry=r,
        )
        self.overhead = Histogram(
            "skillstate_overhead_seconds",
            "The gateway's own time per client request, upstream time excluded",
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
            registry=r,
        )
        self.upstream = Histogram(
            "skillstate_upstream_seconds",
            "Time waiting on upstreams per client request",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
            registry=r,
        )
        self.errors = Counter(
            "skillstate_upstream_errors",
            "Failed client requests by upstream and kind",
            ["upstream", "kind"],
            registry=r,
        )
        self.collapses = Counter(
            "skillstate_state_collapses",
            "Epoch boundaries (collapses) the state lane made",
            registry=r,
        )
        self.refused = Counter(
            "skillstate_refused",
            "Requests the gateway refused itself, nothing sent upstream, by reason and status",
            ["reason", "status"],
            registry=r,
        )
        self.local_answers = Counter(
            "skillstate_local_answers",
            "Requests on the gateway's own routes (model list, local token count, health, "
            "configuration) it answered, by reason",
            ["reason"],
            registry=r,
        )
        self.circuits = Gauge(
            "skillstate_upstream_circuit",
            "1 for the state each upstream's circuit is in, 0 for the others",
            ["upstream", "state"],
            registry=r,
        )
        self._tenants = _TenantMetrics()
        self._seen: OrderedDict[str, float] = OrderedDict()
        active = Gauge(
            "skillstate_sessions_active",
            f"Sessions with a request in the last {ACTIVE_WINDOW:g} s",
            registry=r,
        )
        active.set_function(self._active)
        for kind in (
            "input",
            "cached_input",
            "cache_write",
            "output",
            "reasoning",
            "passthrough_input",
        ):
            self.tokens.labels(kind)
        for kind in ("actual", "passthrough"):
            self.cost.labels(kind)
        self._requests: dict[tuple[str, str, int], Any] = {}
        self._tokens = [(kind, self.tokens.labels(kind)) for kind in _TOKEN_KINDS]
        # The children every row counts in, looked up once (labels() takes a lock each call).
        self._passthrough_tokens = self.tokens.labels("passthrough_input")
        self._actual_cost = self.cost.labels("actual")
        self._passthrough_cost = self.cost.labels("passthrough")

    def row(self, row: Row) -> None:
        self.rows([row])

    def rows(self, rows: list[Row]) -> None:
        """Count ``rows`` (a batch the recorder wrote): each counter is added to once per
        batch, not per row (every ``inc`` takes a lock)."""
        requests: dict[tuple[str, str, int], int] = {}
        tokens = dict.fromkeys(_TOKEN_KINDS, 0)
        estimated = subscription = unpriced = 0
        cost = 0.0
        tenants: list[Row] = []
        for row in rows:
            if "/" in row.session:
                tenants.append(row)
            if row.upstream != LOCAL:
                key = (row.client_wire, row.upstream, row.status)
                requests[key] = requests.get(key, 0) + 1
            for kind in _TOKEN_KINDS:
                tokens[kind] += getattr(row, kind)
            estimated += row.estimated
            if row.login == SUBSCRIPTION:
                subscription += 1
            elif row.cost_usd is None:
                unpriced += 1
            else:
                cost += row.cost_usd
            if row.round == 0:
                self._first(row)
        for key, count in requests.items():
            counter = self._requests.get(key)
            if counter is None:  # labels() takes a lock and builds its key on every call
                counter = self.requests.labels(key[0], key[1], str(key[2]))
                self._requests[key] = counter
            counter.inc(count)
        for kind, counter in self._tokens:
            if tokens[kind]:
                counter.inc(tokens[kind])
        if estimated:
            self.estimated.inc(estimated)
        if subscription:
            self.subscription.inc(subscription)
        if unpriced:
            self.unpriced.inc(unpriced)
        if cost:
            self._actual_cost.inc(cost)
        if tenants:
            self._tenants.rows(tenants)

    def local_answer(self, reason: str, status: int) -> None:
        """The gateway answered a request itself: a refusal (``status`` 400 or over) or an
        answer of its own routes (``server.local_answers``)."""
        if status >= 400:
            self.refused.labels(reason, str(status)).inc()
        else:
            self.local_answers.labels(reason).inc()

    def circuit(self, upstream: str, state: str) -> None:
        """``upstream``'s circuit is in ``state`` now."""
        for each in CIRCUIT_STATES:
            self.circuits.labels(upstream, each).set(1.0 if each == state else 0.0)

    def _first(self, row: Row) -> None:
        if row.passthrough_input:
            self._passthrough_tokens.inc(row.passthrough_input)
        if row.passthrough_cost_usd:
            self._passthrough_cost.inc(row.passthrough_cost_usd)
        if row.overhead_ms is not None:
            self.overhead.observe(row.overhead_ms / 1000)
        if row.upstream != LOCAL and row.upstream_ms is not None:
            self.upstream.observe(row.upstream_ms / 1000)
        if row.status >= 400:
            self.errors.labels(row.upstream, _error_kind(row.status)).inc()
        self._seen[row.session] = row.ts
        self._seen.move_to_end(row.session)
        self._forget_before(row.ts - ACTIVE_WINDOW)

    def _forget_before(self, since: float) -> None:
        """Only the sessions the gauge can still count are kept (most recent last), and no more
        than ``SEEN_SESSIONS`` of them."""
        seen = self._seen
        while seen and (len(seen) > SEEN_SESSIONS or next(iter(seen.values())) < since):
            seen.popitem(last=False)

    def _active(self) -> float:
        since = time.time() - ACTIVE_WINDOW
        # A copy taken in one step: the rows are counted on the database's thread
        # (``Recorder._rows_of``), which may move an entry while /metrics is read.
        seen = list(self._seen.values())
        return float(sum(1 for at in seen if at >= since))

    def sessions_held(self) -> int:
        """How many sessions' last times are kept for the gauge (what its window costs)."""
        return len(self._seen)

    def text(self) -> bytes:
        return generate_latest(self.registry) + generate_latest(self._tenants.registry)

    def tenant_text(self, tenant: str) -> bytes:
        """The series of ``tenant``'s sessions only (a tenant's name needs no escaping)."""
        mark = f'tenant="{tenant}"'.encode()
        lines = generate_latest(self._tenants.registry).splitlines(keepends=True)
        return b"".join(line for line in lines if line.startswith(b"#") or mark in line)


class _TenantMetrics:
    """The counters by tenant, on a registry of their own."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "skillstate_tenant_requests",
            "Upstream requests of a tenant's sessions",
            ["tenant"],
            registry=r,
        )
        self.tokens = Counter(
            "skillstate_tenant_tokens",
            "Tokens of a tenant's sessions, by kind",
            ["tenant", "kind"],
            registry=r,
        )
        self.cost = Counter(
            "skillstate_tenant_cost_usd",
            "Cost in USD of a tenant's sessions (rows with a price)",
            ["tenant"],
            registry=r,
        )

    def rows(self, rows: list[Row]) -> None:
        for row in rows:
            tenant = row.session.partition("/")[0]
            if row.upstream != LOCAL:
                self.requests.labels(tenant).inc()
            for kind in _TOKEN_KINDS:
                if count := getattr(row, kind):
                    self.tokens.labels(tenant, kind).inc(count)
            if row.cost_usd:
                self.cost.labels(tenant).inc(row.cost_usd)
