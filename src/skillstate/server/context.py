"""What every handler reads from the application: the gateway's parts, built once."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

from skillstate.exchange import Observer
from skillstate.pipeline.lane import Lane
from skillstate.server.history import ResponseHistory
from skillstate.state.engine import StateEngine
from skillstate.state.mode import Mode
from skillstate.upstream.client import UpstreamClient
from skillstate.upstream.routing import Router


@dataclass(slots=True)
class GatewayContext:
    router: Router
    client: UpstreamClient
    max_body_bytes: int = 32 * 1024 * 1024
    body_timeout: float = 60.0
    """Seconds a client has to send a request's whole body."""
    observers: list[Observer] = field(default_factory=list)
    engine: StateEngine | None = None
    mode: Mode = Mode.OFF
    lanes: list[Lane] = field(default_factory=list)
    history: ResponseHistory | None = None
    """The ordered lane list every generation request runs through (``gateway.build_lanes``)."""


GATEWAY: web.AppKey[GatewayContext] = web.AppKey("gateway", GatewayContext)
