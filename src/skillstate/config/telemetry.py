"""Where the gateway sends its OpenTelemetry traces and metrics, from the ``otel_endpoint``
setting and the standard ``OTEL_*`` environment variables (docs/observability.md).

Contract. Tracing is on when an endpoint is known: ``otel_endpoint`` (the setting, or
``--otel-endpoint``), else ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (the traces URL as it
stands), else ``OTEL_EXPORTER_OTLP_ENDPOINT``; a base endpoint gets ``/v1/traces`` and
``/v1/metrics`` appended, as the OTLP/HTTP specification says. ``OTEL_SDK_DISABLED=true`` wins
over all of them. Message content is captured only where
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``true``. Read once, by
``load_settings``, from the environment it is given."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

DEFAULT_METRIC_INTERVAL_S = 60.0
"""``OTEL_METRIC_EXPORT_INTERVAL``'s default (60 000 ms)."""
DEFAULT_SERVICE = "skillstate"


@dataclass(frozen=True, slots=True)
class Telemetry:
    traces_endpoint: str = ""
    """The OTLP/HTTP URL spans are posted to; empty: tracing is off."""
    metrics_endpoint: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    """Sent with every export (``OTEL_EXPORTER_OTLP_HEADERS``: a collector's credentials)."""
    service_name: str = DEFAULT_SERVICE
    metric_interval_s: float = DEFAULT_METRIC_INTERVAL_S
    capture_content: bool = False
    """Prompts and completions go into spans, redacted (off by default)."""

    @property
    def enabled(self) -> bool:
        return bool(self.traces_endpoint)


def telemetry_of(endpoint: str, environ: Mapping[str, str]) -> Telemetry:
    """What ``endpoint`` (the ``otel_endpoint`` setting) and ``environ`` say, as the module
    docstring rules."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return Telemetry()
    base = endpoint or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    traces = _signal(endpoint, environ, base, "TRACES", "traces")
    if not traces:
        return Telemetry()
    return Telemetry(
        traces_endpoint=traces,
        metrics_endpoint=_signal(endpoint, environ, base, "METRICS", "metrics"),
        headers=parse_headers(environ.get("OTEL_EXPORTER_OTLP_HEADERS", "")),
        service_name=environ.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE,
        metric_interval_s=_interval(environ.get("OTEL_METRIC_EXPORT_INTERVAL", "")),
        capture_content=_true(environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")),
    )


def _signal(endpoint: str, environ: Mapping[str, str], base: str, name: str, path: str) -> str:
    """One signal's URL: the setting's base, else the signal's own variable, else the base."""
    own = environ.get(f"OTEL_EXPORTER_OTLP_{name}_ENDPOINT", "").strip()
    if own and not endpoint:
        return own
    return f"{base.rstrip('/')}/v1/{path}" if base else ""


def parse_headers(text: str) -> tuple[tuple[str, str], ...]:
    """``key=value`` pairs, comma separated, values percent-decoded (the W3C baggage form
    the OpenTelemetry specification gives ``OTEL_EXPORTER_OTLP_HEADERS``); a pair without
    ``=`` is left out."""
    pairs = []
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            pairs.append((key.strip().lower(), unquote(value.strip())))
    return tuple(pairs)


def _interval(text: str) -> float:
    try:
        milliseconds = float(text)
    except ValueError:
        return DEFAULT_METRIC_INTERVAL_S
    return milliseconds / 1000 if milliseconds > 0 else DEFAULT_METRIC_INTERVAL_S


def _true(text: str | None) -> bool:
    return (text or "").strip().lower() == "true"
