"""OpenTelemetry export: each finished request's spans and GenAI metric points
(``server.genai_spans``) to an OTLP/HTTP collector, off the request path.

The request path only records (``support.trace``); this runs on the ledger's thread, told each
exchange once its rows are made (``Recorder.listeners``): the spans are built whole there,
with the times recorded, and queued to the SDK's ``BatchSpanProcessor``, whose own thread posts
them. A collector that is down costs a line in the log when exports start failing (and one
when they work again), never a wait on the event loop: the exporters' own logs (a warning per
retry) are kept quiet. The OpenTelemetry SDK is imported only when a gateway starts with
tracing on (the ``otel`` extra); ``skillstate --help`` and a gateway without it never load it."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from skillstate.config.telemetry import Telemetry as Options
from skillstate.economics.exchange import Exchange
from skillstate.economics.ledger.row import Row
from skillstate.server.genai_spans import MetricPoint, SpanRecord, traced
from skillstate.support.extras import MissingExtra

log = logging.getLogger("skillstate.telemetry")

SCOPE = "skillstate"
EXPORT_TIMEOUT_S = 2.0
"""How long one export may try (its retries included), on the exporter's thread: a refused
connection is known for a failure at once (the SDK's next retry would wait past it)."""
PROBE_S = 5.0
"""While the collector is down, how often one request's spans are made anyway, to find it
back; the others' are not made at all."""
REACH_S = 1.0
"""How long the first look at the collector (``Telemetry.start``) waits for a connection."""
CLOSE_S = 3.0
"""How long closing waits for the last spans and metrics to go out."""
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48)
"""The bucket boundaries the GenAI semantic conventions advise for the two histograms."""
_QUIET = ("opentelemetry.exporter", "opentelemetry.sdk._shared_internal")
"""The SDK's loggers that speak per batch or per retry: ``_Health`` says it once instead."""


class _Health:
    """Whether the collector took the last export: one log line on each change."""

    def __init__(self, signal: str, endpoint: str) -> None:
        self._signal = signal
        self._endpoint = endpoint
        self._lock = threading.Lock()
        self.ok: bool | None = None
        """None: nothing was exported yet."""
        self.closed = False
        """Closing: the exporters were stopped, their failures say nothing of the collector."""

    def told(self, ok: bool) -> None:
        with self._lock:
            if self.closed:
                return
            if ok == self.ok or (ok and self.ok is None):
                self.ok = ok
                return
            self.ok = ok
        if ok:
            log.info("telemetry: %s export to %s works again", self._signal, self._endpoint)
        else:
            log.warning(
                "telemetry: %s export to %s failed (collector down?); dropped until it answers",
                self._signal,
                self._endpoint,
            )


class Telemetry:
    """The exporters, built once by the composition root; ``record`` is a ledger listener."""

    def __init__(self, options: Options) -> None:
        try:
            import opentelemetry.exporter.otlp.proto.http
            import opentelemetry.sdk  # noqa: F401
        except ImportError:
            raise MissingExtra("OpenTelemetry tracing", "opentelemetry-sdk", "otel") from None
        self.options = options
        for name in _QUIET:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        self._sdk = _Sdk(options)
        self.skipped = 0
        """Requests whose spans were not made: the collector was down."""
        self._reach: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Find out, off the event loop's way, whether the collector takes connections at all:
        one that refuses is down from the start (a line in the log), so the requests until the
        first export would have failed cost nothing either."""
        self._reach = asyncio.get_running_loop().create_task(self._reachable())

    async def looked(self) -> None:
        """Until the first look at the collector (``start``) is over."""
        if self._reach is not None:
            await asyncio.shield(self._reach)

    async def _reachable(self) -> None:
        url = urlsplit(self.options.traces_endpoint)
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            async with asyncio.timeout(REACH_S):
                _, writer = await asyncio.open_connection(url.hostname, port)
        except (OSError, TimeoutError, ValueError):
            self._sdk.health[0].told(False)
            return
        writer.close()

    def tracing(self) -> bool:
        """Whether a request arriving now is traced: while the collector is down, only one
        every ``PROBE_S`` (to find it back); the others are served as without tracing."""
        if self._sdk.wanted():
            return True
        self.skipped += 1
        return False

    def record(self, exchange: Exchange, rows: list[Row], boundary: bool) -> None:
        """The exchange's spans and points, made and queued (on the ledger's thread); none
        for a request that was not traced (``tracing``)."""
        if exchange.trace is None:
            return
        made = traced(exchange, rows, boundary, content=self.options.capture_content)
        if made.spans:
            self._sdk.spans(made.spans, exchange.trace.trace_id if exchange.trace else "")
        for point in made.points:
            self._sdk.point(point)

    async def flush(self) -> None:
        """Until what was queued went out (or ``CLOSE_S`` passed)."""
        await asyncio.to_thread(self._sdk.flush, CLOSE_S)

    async def close(self) -> None:
        """Flush what is queued, then stop the exporters' threads; never longer than about
        ``CLOSE_S`` twice, whatever the collector does."""
        if self._reach is not None:
            self._reach.cancel()
        try:
            await asyncio.wait_for(asyncio.to_thread(self._sdk.close), 2 * CLOSE_S + 1)
        except TimeoutError:
            log.warning("telemetry: the exporters did not stop in time; left behind")


class _Sdk:
    """The SDK's objects; imported here only."""

    def __init__(self, options: Options) -> None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import (
            MetricExportResult,
            PeriodicExportingMetricReader,
        )
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        self._api = (ReadableSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags)
        headers = dict(options.headers)
        self.resource = Resource.create({"service.name": options.service_name})
        self.scope = InstrumentationScope(SCOPE)
        span_health = _Health("span", options.traces_endpoint)
        metric_health = _Health("metric", options.metrics_endpoint)

        class Spans(OTLPSpanExporter):
            def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
                try:
                    result = super().export(spans)
                except Exception:
                    result = SpanExportResult.FAILURE
                span_health.told(result is SpanExportResult.SUCCESS)
                return result

        class Metrics(OTLPMetricExporter):
            def export(self, *args: Any, **kwargs: Any) -> MetricExportResult:
                try:
                    result = super().export(*args, **kwargs)
                except Exception:
                    result = MetricExportResult.FAILURE
                metric_health.told(result is MetricExportResult.SUCCESS)
                return result

        self.span_exporter = Spans(
            endpoint=options.traces_endpoint, headers=headers, timeout=EXPORT_TIMEOUT_S
        )
        self.processor = BatchSpanProcessor(self.span_exporter)
        self.metric_exporter = Metrics(
            endpoint=options.metrics_endpoint, headers=headers, timeout=EXPORT_TIMEOUT_S
        )
        reader = PeriodicExportingMetricReader(
            self.metric_exporter,
            export_interval_millis=options.metric_interval_s * 1000,
            export_timeout_millis=EXPORT_TIMEOUT_S * 1000,
        )
        self.meters = MeterProvider(resource=self.resource, metric_readers=[reader])
        meter = self.meters.get_meter(SCOPE)
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.health = (span_health, metric_health)
        self._probe_at = 0.0

    def wanted(self) -> bool:
        """Whether spans are worth making now: the collector took the last export (or has
        not been tried), or a probe is due."""
        if self.health[0].ok is not False:
            return True
        now = time.monotonic()
        if now < self._probe_at:
            return False
        self._probe_at = now + PROBE_S
        return True

    def spans(self, records: list[SpanRecord], trace_id: str) -> None:
        ReadableSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags = self._api
        trace = int(trace_id, 16)
        flags = TraceFlags(TraceFlags.SAMPLED)
        for record in records:
            context = SpanContext(
                trace, int(record.span_id, 16), is_remote=False, trace_flags=flags
            )
            parent = None
            if record.parent_id is not None:
                parent = SpanContext(
                    trace, int(record.parent_id, 16), is_remote=True, trace_flags=flags
                )
            status = Status(StatusCode.UNSET)
            if record.error is not None:
                status = Status(StatusCode.ERROR, record.error)
            span = ReadableSpan(
                record.name,
                context=context,
                parent=parent,
                resource=self.resource,
                attributes=record.attributes,
                kind=SpanKind[record.kind],
                status=status,
                start_time=record.start_ns,
                end_time=record.end_ns,
                instrumentation_scope=self.scope,
            )
            self.processor.on_end(span)

    def point(self, point: MetricPoint) -> None:
        for kind, count in point.tokens.items():
            self.tokens.record(count, {**point.attributes, "gen_ai.token.type": kind})
        self.duration.record(point.duration_s, point.attributes)

    def flush(self, seconds: float) -> None:
        self.processor.force_flush(int(seconds * 1000))
        self.meters.force_flush(int(seconds * 1000))

    def close(self) -> None:
        """A collector that answered gets what is queued (one not heard from yet, a second of
        spans, and metrics once it took spans);
        then the exporters stop before the providers, so that an export still retrying
        against a collector that is down gives up at once."""
        spans, metrics = (health.ok for health in self.health)
        if spans is not False:  # the span processor's flush is bounded; a metric export is not
            self.processor.force_flush(int((CLOSE_S if spans else 1.0) * 1000))
        if metrics or (metrics is None and spans):
            self.meters.force_flush(int(CLOSE_S * 1000))
        for health in self.health:
            health.closed = True
        self.span_exporter.shutdown()  # type: ignore[no-untyped-call]
        self.metric_exporter.shutdown()
        self.processor.shutdown()  # type: ignore[no-untyped-call]
        self.meters.shutdown(timeout_millis=int(CLOSE_S * 1000))
