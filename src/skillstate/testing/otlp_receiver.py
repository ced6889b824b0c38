"""A small OTLP/HTTP receiver for the tests: an aiohttp server on 127.0.0.1 that takes what an
OpenTelemetry exporter posts to ``/v1/traces`` and ``/v1/metrics`` (protobuf, decoded with the
official ``opentelemetry-proto`` messages) and keeps it, in the order it came.

``async with OtlpReceiver() as receiver:`` — ``receiver.url`` is the endpoint to give the
gateway (``otel_endpoint``); ``receiver.spans`` every span received, ``receiver.metrics`` the
name of every metric with its data points' attributes."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web

from skillstate.testing.loopback import on_loopback


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    """``SERVER``, ``CLIENT``, ``INTERNAL``..."""
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    error: bool
    service: str


@dataclass(slots=True)
class ReceivedMetric:
    name: str
    unit: str
    points: list[dict[str, Any]] = field(default_factory=list)
    """Each data point's attributes, with its ``count`` and ``sum`` (histograms)."""


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.metrics: list[ReceivedMetric] = []
        self.posts: list[str] = []
        """The path of every export received."""
        self.arrived = asyncio.Condition()
        self.url = ""
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> OtlpReceiver:
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        app.router.add_post("/v1/metrics", self._metrics)
        self.url = await self._stack.enter_async_context(on_loopback(app))
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stack.aclose()

    async def wait_for(self, check: Callable[[], bool]) -> None:
        """Until ``check()`` holds for what was received (bound it with ``asyncio.timeout``)."""
        async with self.arrived:
            await self.arrived.wait_for(check)

    async def _body(self, request: web.Request) -> bytes:
        body = await request.read()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        return body

    async def _traces(self, request: web.Request) -> web.Response:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        message = ExportTraceServiceRequest()
        message.ParseFromString(await self._body(request))
        for resource_spans in message.resource_spans:
            service = _attributes(resource_spans.resource.attributes).get("service.name", "")
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(_span(span, str(service)))
        await self._arrived(request.path)
        body = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")

    async def _metrics(self, request: web.Request) -> web.Response:
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceRequest,
            ExportMetricsServiceResponse,
        )

        message = ExportMetricsServiceRequest()
        message.ParseFromString(await self._body(request))
        for resource_metrics in message.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    received = ReceivedMetric(metric.name, metric.unit)
                    if metric.HasField("histogram"):
                        for point in metric.histogram.data_points:
                            shown = _attributes(point.attributes)
                            received.points.append(
                                {**shown, "count": point.count, "sum": point.sum}
                            )
                    self.metrics.append(received)
        await self._arrived(request.path)
        body = ExportMetricsServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")

    async def _arrived(self, path: str) -> None:
        self.posts.append(path)
        async with self.arrived:
            self.arrived.notify_all()


_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


def _span(span: Any, service: str) -> ReceivedSpan:
    parent = span.parent_span_id.hex() or None
    return ReceivedSpan(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=parent,
        name=span.name,
        kind=_KINDS.get(span.kind, str(span.kind)),
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        attributes=_attributes(span.attributes),
        error=span.status.code == 2,
        service=service,
    )


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(each) for each in value.array_value.values]
    return getattr(value, kind) if kind else None
