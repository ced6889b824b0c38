"""The record of one client request (``Exchange``): started for an upstream call
(``exchange_for``; ``Forward`` writes the rest), built whole for a reply the gateway made
itself (``notify_local``), and handed to the gateway's observers once (``notify``)."""

from __future__ import annotations

import logging
import time

from skillstate.conversation import Request, Response, Wire
from skillstate.economics.exchange import LOCAL, Exchange
from skillstate.protocols.logins import Login
from skillstate.server.context import GatewayContext
from skillstate.support.trace import Trace

log = logging.getLogger("skillstate.forward")
requests_log = logging.getLogger("skillstate.requests")


def exchange_for(
    request: Request,
    session: tuple[str, str],
    *,
    upstream: str,
    wire: Wire,
    mode: str,
    forwarded_original: bool = False,
    lanes: str = "",
    sent: Request | None = None,
    login: Login = Login.NONE,
    trace: Trace | None = None,
) -> Exchange:
    """The record of one client request, started now."""
    return Exchange(
        session=session[0],
        session_source=session[1],
        client_wire=request.source,
        upstream_wire=wire,
        upstream=upstream,
        request=request,
        response=None,
        status=0,
        streamed=request.params.stream,
        forwarded_original=forwarded_original,
        elapsed_s=0.0,
        started=time.perf_counter(),
        mode=mode,
        lanes=lanes,
        sent=sent,
        login=login,
        trace=trace,
    )


def notify_local(
    gateway: GatewayContext,
    request: Request,
    session: tuple[str, str],
    response: Response,
    *,
    mode: str,
    note: str,
    lanes: str = "",
    started: float,
    login: Login = Login.NONE,
    trace: Trace | None = None,
) -> None:
    """Observers see a reply the gateway made itself (nothing went upstream) like any other:
    its exchange built whole, once the reply was made."""
    exchange = Exchange(
        session=session[0],
        session_source=session[1],
        client_wire=request.source,
        upstream_wire=request.source,
        upstream=LOCAL,
        request=request,
        response=response,
        status=200,
        streamed=request.params.stream,
        forwarded_original=False,
        elapsed_s=time.perf_counter() - started,
        started=started,
        note=note,
        mode=mode,
        lanes=lanes,
        rounds=0,
        login=login,
        trace=trace,
    )
    notify(gateway, exchange)


def notify(gateway: GatewayContext, exchange: Exchange) -> None:
    """Observers run after the reply was sent; one that fails is logged and skipped."""
    if requests_log.isEnabledFor(logging.DEBUG):
        requests_log.debug(exchange.summary())
    for observer in gateway.observers:
        try:
            observer(exchange)
        except Exception:
            log.exception("observer %r failed", observer)
