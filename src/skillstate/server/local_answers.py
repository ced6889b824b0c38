"""What the gateway answers itself: its refusals (a body too large or too slow, not JSON, not
valid, a missing token, a foreign Host or Origin, a model no upstream serves, an unknown URL,
headers too large...) and the answers of its own routes (the model list, a token count made
here, health, configuration). A forwarded request is recorded by its ``Exchange``; these are
not, so each is seen here instead: one ``-v`` line on the ``skillstate.requests`` logger, in
the shape of a forwarded request's line, and a Prometheus counter by reason (``/metrics``)::

    refused POST /v1/chat/completions status=413 reason=body_too_large 45.1ms (request body ...)
    answered GET /v1/models status=200 reason=models_listed 3.2ms

    skillstate_refused_total{reason="body_too_large",status="413"} 1.0
    skillstate_local_answers_total{reason="models_listed"} 1.0

Each is seen where it is made (``answered``, with the request: the time since it arrived, up
to its answer), so a forwarded request pays nothing at all for this. What aiohttp's parser or
the listener refuses before any middleware runs is seen where it is answered
(``report_refused``). The management routes' own parameter errors (``/cost``'s filters, which
``server.cost_routes`` answers) are not among them.

Reasons are short snake_case words, one per cause: ``reason_for`` gives the one of a status
where the place that refuses names none of its own.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TypeVar

from aiohttp import web

from skillstate.conversation import ErrorKind
from skillstate.economics.ledger.metrics import Metrics
from skillstate.server.context import GATEWAY
from skillstate.server.timing import TIMING

requests_log = logging.getLogger("skillstate.requests")

Answer = TypeVar("Answer", bound=web.StreamResponse)


@dataclass(frozen=True, slots=True)
class LocalAnswer:
    """Why the gateway answered a request itself, and what it told the client."""

    reason: str
    detail: str = ""


_BY_STATUS = {
    400: "invalid_request",
    401: "no_token",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "body_timeout",
    413: "body_too_large",
    415: "unsupported_content_type",
    431: "headers_too_large",
    500: "internal_error",
    501: "not_implemented",
    502: "no_upstream",
    503: "unavailable",
}


def reason_for(status: int, kind: ErrorKind | None = None) -> str:
    """The reason of a refusal whose maker names none: an unknown URL's (404 ``NO_ROUTE``),
    else its status's, else ``client_error`` or ``gateway_error``."""
    if kind is ErrorKind.NO_ROUTE:
        return "unknown_path"
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return "client_error" if status < 500 else "gateway_error"


def answered(request: web.Request, response: Answer, reason: str, detail: str = "") -> Answer:
    """``response``, the gateway's own answer to ``request`` for ``reason`` (``detail``: what
    it told the client, for the log line), seen now: logged and counted, timed from the
    request's arrival (``server.timing``) to its answer."""
    timing = request.get(TIMING)
    elapsed = time.perf_counter() - timing.arrived if timing is not None else 0.0
    recorder = request.app[GATEWAY].recorder
    metrics = recorder.metrics if recorder is not None else None
    answer = LocalAnswer(reason, detail)
    _seen(metrics, request.method, request.path, response.status, answer, elapsed)
    return response


def report_refused(
    app: web.Application | None,
    method: str,
    path: str,
    status: int,
    answer: LocalAnswer,
    elapsed_s: float,
) -> None:
    """``answered`` for a refusal made before any middleware ran (the HTTP parser's, the
    listener's), with no request to read: ``app`` is the gateway's application (None: not
    known, only logged)."""
    gateway = app.get(GATEWAY) if app is not None else None
    recorder = gateway.recorder if gateway is not None else None
    metrics = recorder.metrics if recorder is not None else None
    _seen(metrics, method, path, status, answer, elapsed_s)


def line(method: str, path: str, status: int, answer: LocalAnswer, elapsed_s: float) -> str:
    """The ``-v`` line of one answer (the shape of ``Exchange.summary``'s)."""
    verb = "refused" if status >= 400 else "answered"
    note = f" ({answer.detail})" if answer.detail else ""
    return (
        f"{verb} {method} {path} status={status} reason={answer.reason} "
        f"{elapsed_s * 1000:.1f}ms{note}"
    )


def _seen(
    metrics: Metrics | None,
    method: str,
    path: str,
    status: int,
    answer: LocalAnswer,
    elapsed_s: float,
) -> None:
    if metrics is not None:
        metrics.local_answer(answer.reason, status)
    if requests_log.isEnabledFor(logging.DEBUG):
        requests_log.debug(line(method, path, status, answer, elapsed_s))
