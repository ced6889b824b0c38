"""The composition root: settings in, a running gateway out. The only place that knows how
the parts fit together."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import os
import signal
import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillstate.config import Settings
from skillstate.conversation import Usage, Wire
from skillstate.economics.allowance import Pricer, fallback_price
from skillstate.economics.ledger import Ledger, LedgerStore, Recorder
from skillstate.economics.ledger.postgres_ledger import PostgresLedger
from skillstate.economics.ledger.recorder import Pricing
from skillstate.economics.prices import builtin_catalog
from skillstate.economics.tokenizer import encoding, give_back_heap
from skillstate.mcp import McpTools
from skillstate.pipeline.lane import Lane
from skillstate.pipeline.lineup import LANES
from skillstate.pipeline.outputs_lane import OutputsLane
from skillstate.pipeline.surface import LaneParts
from skillstate.server.app import build_app
from skillstate.server.budgets import Budgets
from skillstate.server.connection import GatewayRunner, HeaderLimits
from skillstate.server.context import GatewayContext, LaneHeaders
from skillstate.server.guard import Guard, check_exposure
from skillstate.server.history import ResponseHistory
from skillstate.server.keyring import KeyRing
from skillstate.server.listener import Listener
from skillstate.server.mcp_route import McpEndpoint
from skillstate.server.telemetry import Telemetry
from skillstate.state.engine import StateEngine
from skillstate.state.epochs import CachePrices, upstream_prices
from skillstate.state.mode import Mode
from skillstate.state.prepared import EngineConfig, PriceLookup
from skillstate.state.schema import Bounds, StateSchema
from skillstate.storage.audit import open_audit
from skillstate.storage.keys import PostgresKeyStore, SqliteKeyStore
from skillstate.storage.leases import Leases, LocalLeases, RedisLeases, SqliteLeases
from skillstate.storage.spend import (
    MemorySpendStore,
    PostgresSpendStore,
    SpendStore,
    SqliteSpendStore,
)
from skillstate.storage.stores import Stores, open_stores
from skillstate.support.extras import MissingExtra
from skillstate.upstream.circuit import CircuitPolicy
from skillstate.upstream.client import UpstreamClient
from skillstate.upstream.retry import RetryPolicy
from skillstate.upstream.routing import Router, Upstream, chatgpt_upstream, normalize_base_url
from skillstate.upstream.shared_circuits import CircuitSync, RedisWindow, Window
from skillstate.upstream.sqlite_windows import Run, SqliteWindow, make_tables

log = logging.getLogger("skillstate")


def build_context(settings: Settings) -> GatewayContext:
    upstreams = [
        Upstream(
            name=up.name,
            base_url=normalize_base_url(up.base_url),
            wire=None if up.wire == "auto" else Wire(up.wire),
            api_key=up.api_key.get_secret_value() if up.api_key else None,
            models=tuple(up.models),
            headers=tuple(up.headers.items()),
            fallbacks=up.fallbacks,
            rpm=up.rpm,
            tpm=up.tpm,
            profile=up.resolved_profile,
            retry_first_byte_timeout=up.retries_first_byte_timeout,
        )
        for up in settings.resolved_upstreams()
    ]
    client = UpstreamClient(
        connect_timeout=settings.connect_timeout,
        total_timeout=settings.upstream_timeout,
        read_timeout=settings.stream_idle_timeout,
    )
    return GatewayContext(
        router=Router(upstreams, chatgpt_upstream(settings.chatgpt_base_url)),
        client=client,
        settings=settings,
        tenant_keys=bool(settings.tenant_api_keys),
        max_body_bytes=settings.max_body_bytes,
        max_messages=settings.max_messages,
        max_parts=settings.max_parts,
        body_timeout=settings.body_timeout,
        mode=Mode(settings.mode),
        subscription_rewrite=settings.subscription_rewrite,
        retry=RetryPolicy(
            attempts=settings.retries + 1,
            cap_s=settings.retry_max_wait,
            deadline_s=settings.retry_deadline,
        ),
        first_byte_timeout=settings.first_byte_timeout,
        circuit_policy=CircuitPolicy(
            failure_rate=settings.circuit_failure_rate,
            min_calls=settings.circuit_min_requests,
            window_s=settings.circuit_window_seconds,
            open_s=settings.circuit_open_seconds,
            trials=settings.circuit_trials,
            reroute_rate=settings.circuit_reroute_rate,
        ),
    )


def build_telemetry(settings: Settings) -> Telemetry | None:
    """The OpenTelemetry exporters where tracing is on (``config.telemetry``), else None."""
    options = settings.telemetry
    if not options.enabled:
        return None
    telemetry = Telemetry(options)
    log.info("telemetry: traces to %s", options.traces_endpoint)
    return telemetry


def build_pricing(settings: Settings) -> Pricing:
    """What a model's usage costs: the shipped catalog with the config's ``[prices]``."""
    catalog = builtin_catalog().merged(settings.prices, source=settings.sources["prices"])

    def pricing(model: str, usage: Usage) -> float | None:
        found = catalog.cost(model, usage)
        return None if found is None else float(found)

    return pricing


def build_guard(settings: Settings) -> Guard:
    token = settings.auth_token.get_secret_value() if settings.auth_token else None
    return Guard(
        bound=settings.host,
        token=token,
        hosts=frozenset(settings.allowed_hosts),
        origins=frozenset(settings.allowed_origins),
    )


def build_cache_prices(settings: Settings) -> PriceLookup:
    """The epoch rule's prices: a model's cache ratios from the catalog (with the config's
    ``[prices]``) where it is listed, the upstream wire's defaults otherwise."""
    catalog = builtin_catalog().merged(settings.prices, source=settings.sources["prices"])

    def prices(model: str, wire: Wire) -> CachePrices:
        price = catalog.price(model)
        if price is None or price.input <= 0:
            return upstream_prices(wire)
        write = price.cache_write_5m
        return upstream_prices(
            wire,
            cached_input=float(price.cached_input / price.input),
            cache_write=None if write is None else float(write / price.input),
            output=float(price.output / price.input),
        )

    return prices


def build_engine(settings: Settings, stores: Stores, leases: Leases | None = None) -> StateEngine:
    bounds = Bounds(
        max_patch_bytes=settings.max_patch_bytes, max_state_bytes=settings.max_state_bytes
    )
    schema = StateSchema.from_keys(settings.state_schema, bounds=bounds)
    config = EngineConfig(
        schema=schema,
        options=settings.collapse,
        initial_state=dict(settings.initial_state or {}),
        prices=build_cache_prices(settings),
    )
    shared = stores.shared is not None or settings.workers > 1
    return StateEngine(stores.state, stores.archive, config, shared=shared, leases=leases)


@dataclass(slots=True)
class Coordination:
    """What the gateways sharing sessions coordinate through: who makes a session's boundary
    (``leases``), each upstream's circuit (``window``: None, each process's own) and rate
    limits (``machine``: the SQLite file of one machine's processes; with Redis, the context's
    ``redis``)."""

    leases: Leases
    window: Window | None = None
    machine: Run | None = None


async def build_coordination(settings: Settings, stores: Stores, redis: Any) -> Coordination:
    """Redis where one is set; else, for the processes of one machine (``workers`` > 1), the
    SQLite file they share; else nothing to coordinate (one process)."""
    if redis is not None:
        return Coordination(RedisLeases(redis), RedisWindow(redis))
    database = stores.database
    if settings.workers > 1 and database is not None:
        try:
            await make_tables(database.run)
            leases = await SqliteLeases.open(database)
        except sqlite3.Error as error:
            log.warning("the workers cannot coordinate through SQLite (%s): each alone", error)
        else:
            return Coordination(leases, SqliteWindow(database.run), database.run)
    return Coordination(LocalLeases())


def build_lanes(settings: Settings, engine: StateEngine) -> list[Lane]:
    """Every lane of the one list (``pipeline.lineup.LANES``, which says why that order), in
    its order, each built by its own declaration with its options (its table's, or its
    defaults) and what only this root has: the state engine, the catalog, the clock. Those
    switched off are built too: a request may ask for one (``x-skillstate-lanes``); which run
    by default is every one not in ``settings.lanes.off``. A lane switched on that cannot run
    here (the vision lane without Pillow: ``pages.MissingPillow``) is an error here, at
    startup."""
    check_lanes(settings)
    parts = LaneParts(engine, builtin_catalog(), time.time)
    lanes = [spec.build(parts, settings.lanes.options_for(spec.name)) for spec in LANES]
    for lane in lanes:
        if isinstance(lane, OutputsLane) and settings.lanes.enabled(lane.name):
            engine.viewer = lane.viewer()  # bulky outputs compacted once that pays
    return lanes


def check_lanes(settings: Settings) -> None:
    """Raise where a lane switched on cannot run here (``LaneSpec.check``: the vision lane
    without Pillow, naming the extra to install)."""
    for spec in LANES:
        if spec.check is not None and settings.lanes.enabled(spec.name):
            spec.check()


def lane_headers() -> LaneHeaders:
    """The request headers the lanes read (``LaneSpec.header``): each header's name, its
    lane's name and the values it accepts."""
    return tuple(
        (spec.header.name, spec.name, spec.header.values)
        for spec in LANES
        if spec.header is not None
    )


LINGER_S = 2.0
"""How long the rest of a body the gateway refused (too large, too slow) is read and dropped,
so the client can read the refusal before the connection closes."""


@dataclass(slots=True)
class RunningGateway:
    url: str
    context: GatewayContext


@contextlib.asynccontextmanager
async def running(
    settings: Settings, *, port: int | None = None, reuse_port: bool = False
) -> AsyncIterator[RunningGateway]:
    """Start the gateway on ``settings.host`` and ``port`` (default ``settings.port``; 0 picks a
    free one) and stop it on exit. A non-loopback host without a token is refused first
    (``guard.Exposed``)."""
    guard = build_guard(settings)
    check_exposure(settings.host, guard.token)
    check_lanes(settings)  # before any store is opened
    telemetry = build_telemetry(settings)  # a missing extra is said before anything opens
    context = build_context(settings)
    redis = shared_redis(settings.redis)  # a missing extra is said before anything opens
    options = settings.store_options()
    stores = await open_stores(Path(settings.data_dir), options=options, url=settings.store)
    if stores.degraded:
        log.warning("state kept in memory only: %s", stores.degraded)
    coordination = await build_coordination(settings, stores, redis)
    context.engine = build_engine(settings, stores, coordination.leases)
    context.stores = stores
    context.audit = open_audit(stores)
    context.redis = redis
    context.machine = coordination.machine
    keys = key_ring(stores)
    if keys is not None:
        await keys.start()
        context.budgets = build_budgets(settings, stores)
    context.keys = keys
    context.lanes = build_lanes(settings, context.engine)
    context.lanes_off = settings.lanes.off
    context.lane_headers = lane_headers()
    context.idle_off = frozenset(spec.name for spec in LANES if spec.idle_off)
    context.idle_passing = frozenset(spec.name for spec in LANES if spec.idle_passing)
    context.history = ResponseHistory(stores.archive)
    context.mcp = McpEndpoint(functools.partial(_mcp_tools, settings, context.engine, stores))
    ledger = await open_ledger(stores)
    recorder = Recorder(
        ledger, build_pricing(settings), retention_days=settings.ledger_retention_days
    )
    context.recorder = recorder
    context.observers.append(recorder)
    context.telemetry = telemetry
    if telemetry is not None:
        recorder.listeners.append(telemetry.record)
        telemetry.start()
    await recorder.start()
    circuits = None
    if coordination.window is not None:  # each circuit judged with the others' outcomes too
        for upstream in context.router.upstreams:
            context.circuit(upstream.name)  # in step before its first call here
        circuits = CircuitSync(coordination.window, context.circuits, context.circuit_policy)
        circuits.start()
    # On stop, the listening socket closes at once and requests in flight (streams included)
    # get ``shutdown_timeout`` seconds to finish before they are cancelled.
    runner = GatewayRunner(
        build_app(context, guard),
        HeaderLimits(settings.max_header_line_bytes, settings.max_headers),
        handler_cancellation=True,
        access_log=None,
        shutdown_timeout=settings.shutdown_timeout,
        # Between two requests a connection may idle as long as a first request head may
        # take (listener.py); a refused body is read for at most LINGER_S before closing.
        keepalive_timeout=settings.header_timeout,
        lingering_time=LINGER_S,
    )
    await runner.setup()
    site = Listener(
        runner,
        settings.host,
        settings.port if port is None else port,
        max_connections=settings.max_connections,
        header_timeout=settings.header_timeout,
        reuse_port=reuse_port,
    )
    try:
        await site.start()  # a port in use fails here: the runner and stores still close
        bound = runner.addresses[0][1]
        yield RunningGateway(f"http://{settings.host}:{bound}", context)
    finally:
        await runner.cleanup()
        if circuits is not None:
            await circuits.close()
        if keys is not None:
            await keys.close()
        if context.budgets is not None:
            await context.budgets.drain()  # the requests' spending settled before stores close
        await context.mcp.close()
        await recorder.close()
        if telemetry is not None:
            await telemetry.close()  # after the ledger's last rows made their spans
        await ledger.close()
        await stores.close()
        if context.redis is not None:
            await context.redis.aclose()


async def open_ledger(stores: Stores) -> LedgerStore:
    """The ledger beside Σ: in the shared database where there is one (on the SQLite ledger
    under the data directory while the database fails, or until it is first reached), else
    in that SQLite database (in memory without one)."""
    if stores.shared is None:
        return await Ledger.open(stores.database)
    failed = None
    if stores.shared.pool is None:  # not reached at start: tried again as batches come
        failed = f"the shared store could not be opened ({stores.degraded})"
    return await PostgresLedger.open(stores.shared, stores.database, failed=failed)


def key_ring(stores: Stores) -> KeyRing | None:
    """The virtual keys, in the store beside Σ (None without a database: no keys)."""
    if stores.shared is not None:
        return KeyRing(PostgresKeyStore(stores.shared))
    if stores.database is not None:
        return KeyRing(SqliteKeyStore(stores.database))
    return None


def build_budgets(settings: Settings, stores: Stores) -> Budgets:
    """The keys' spending, kept beside their keys, priced by the catalog with the config's
    ``[prices]`` and the fallback price for a model it does not list."""
    catalog = builtin_catalog().merged(settings.prices, source=settings.sources["prices"])
    fallback = fallback_price(
        settings.budget_fallback_input_price, settings.budget_fallback_output_price
    )
    pricer = Pricer(catalog, fallback, settings.budget_output_tokens)
    store: SpendStore = MemorySpendStore()
    if stores.shared is not None:
        store = PostgresSpendStore(stores.shared)
    elif stores.database is not None:
        store = SqliteSpendStore(stores.database)
    return Budgets(store, pricer)


def shared_redis(url: str) -> Any:
    """The client of the Redis the gateways share, or None where none is set. It connects on
    first use, and a command that fails is the caller's to survive (``shared_limits``)."""
    if not url:
        return None
    try:
        from redis import asyncio as aioredis
    except ImportError:
        raise MissingExtra("a redis:// URL", "redis", "shared") from None
    return aioredis.from_url(url, socket_connect_timeout=1.0, socket_timeout=1.0)


def _mcp_tools(
    settings: Settings, engine: StateEngine, stores: Stores, scope: str | None
) -> McpTools:
    """The MCP server's tools over the gateway's own archive and state, for ``scope`` (a
    tenant's, or None: everything)."""
    budget = settings.lanes.options_for("outputs").budget_chars
    schema = engine.config.schema
    return McpTools(
        engine.archive,
        engine.store,
        schema,
        budget_chars=budget,
        degraded=stores.degraded,
        scope=scope,
    )


HEAP_TRIM_EVERY = 10.0
"""Seconds between two returns of the freed heap to the system (``give_back_heap``)."""


async def _give_back_heap_every(seconds: float) -> None:
    """Request bodies of a megabyte and more are freed in the middle of the heap, where glibc
    keeps their pages; given back now and then, the resident size follows what is in use
    instead of creeping up with the requests served (a few milliseconds each time)."""
    while True:
        await asyncio.sleep(seconds)
        give_back_heap()


async def serve(settings: Settings, *, reuse_port: bool = False) -> None:
    """Run until SIGINT or SIGTERM (``reuse_port``: one of ``workers`` processes on the port,
    ``cli.workers``)."""
    # Whatever this process creates is its user's alone (the stores also set their modes).
    os.umask(0o077)
    logging.basicConfig(
        level=logging.DEBUG if settings.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    # The tokenizer's vocabulary takes a few tenths of a second to load: do it now, before the
    # port opens, rather than on the first request; and on this thread, so that the load's
    # freed fragments stay in the main heap (which malloc_trim gives back) instead of pinning
    # a worker thread's arena (about 5 MB more resident for the life of the process).
    encoding()
    trim = loop.create_task(_give_back_heap_every(HEAP_TRIM_EVERY), name="skillstate-trim")
    async with running(settings, reuse_port=reuse_port) as gateway:
        # What was built to start lives as long as the process: out of the collector's way,
        # so that its full collections walk only what requests make (a pause in a request's
        # tail). Here, in the server's own process, not in ``running``, which tests start by
        # the hundred in one process.
        gc.collect()
        gc.freeze()
        upstreams = gateway.context.router.upstreams
        log.info("skillstate listening on %s", gateway.url)
        log.info("mode %s", settings.mode)
        log.info("data directory %s", settings.data_dir)
        for up in upstreams:
            wire = up.wire.value if up.wire else "the client's own wire"
            log.info(
                "upstream %s: %s (%s, models %s)", up.name, up.base_url, wire, ",".join(up.models)
            )
        if not upstreams:
            log.warning("no upstream configured: requests will be refused (use --upstream URL)")
        await stop.wait()
        log.info("stopping: draining requests in flight (up to %gs)", settings.shutdown_timeout)
    trim.cancel()
