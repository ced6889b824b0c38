"""The aiohttp application: the route table and the error boundary."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from skillstate.conversation import ErrorKind, Wire
from skillstate.server import info
from skillstate.server.audit_routes import add_audit_routes
from skillstate.server.client_stream import PREPARED
from skillstate.server.compact_route import handle_compact
from skillstate.server.config_route import CONFIG_PATH, gateway_config
from skillstate.server.context import GATEWAY, GatewayContext
from skillstate.server.cost_routes import add_cost_routes
from skillstate.server.docs_routes import add_docs_routes
from skillstate.server.errors import error_response, guess_wire
from skillstate.server.guard import Guard, add_cors_headers, guard_middleware
from skillstate.server.local_answers import answered, reason_for
from skillstate.server.mcp_route import MCP_PATH, handle_mcp
from skillstate.server.proxy import handle_generation
from skillstate.server.socket_route import handle_socket
from skillstate.server.state_routes import add_state_routes
from skillstate.server.timing import (
    add_overhead_header,
    timing_middleware,
    traced_timing_middleware,
)
from skillstate.server.ui_login import add_login_routes
from skillstate.server.ui_routes import add_ui_routes

log = logging.getLogger("skillstate.server")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def build_app(gateway: GatewayContext, guard: Guard | None = None) -> web.Application:
    """The application; ``guard`` admits requests before anything else runs (by default:
    bound to 127.0.0.1, no token, nothing allowed besides loopback)."""
    # The guard comes first: a request it refuses never reaches a handler, and the error
    # boundary then sees the request as the guard passed it on.
    telemetry = gateway.telemetry
    timing = timing_middleware if telemetry is None else traced_timing_middleware(telemetry.tracing)
    middlewares = [timing, guard_middleware(guard or Guard(), gateway), _errors]
    app = web.Application(client_max_size=gateway.max_body_bytes, middlewares=middlewares)
    app[GATEWAY] = gateway
    app.on_response_prepare.append(add_cors_headers)
    app.on_response_prepare.append(add_overhead_header)
    generation: list[tuple[str, Wire]] = [
        ("/chat/completions", Wire.CHAT),
        ("/responses", Wire.RESPONSES),
        ("/messages", Wire.MESSAGES),
    ]
    for prefix in ("/v1", ""):
        for path, wire in generation:
            app.router.add_post(prefix + path, _generation(wire))
        app.router.add_post(prefix + "/messages/count_tokens", info.count_tokens)
        app.router.add_post(prefix + "/responses/compact", handle_compact)
        app.router.add_get(prefix + "/responses", handle_socket)  # the WebSocket transport
        app.router.add_get(prefix + "/models", info.models)
    app.router.add_get("/health", info.health)
    app.router.add_get(CONFIG_PATH, gateway_config)
    app.router.add_route("*", MCP_PATH, handle_mcp)
    add_state_routes(app.router)
    add_cost_routes(app.router)
    add_audit_routes(app.router)
    add_ui_routes(app.router)
    add_login_routes(app.router, (guard or Guard()).token)
    add_docs_routes(app.router)
    app.router.add_get("/", info.root)  # aiohttp answers HEAD for GET routes too

    async def start(_: web.Application) -> None:
        await gateway.client.start()

    async def stop(_: web.Application) -> None:
        await gateway.client.close()

    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app


def _generation(wire: Wire) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return await handle_generation(request, wire)

    handler.__name__ = f"generation_{wire.name.lower()}"
    return handler


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Whatever goes wrong, the client gets an error it can read, in its own wire's shape."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if PREPARED in request:  # its response has begun: the handler ended it as it could
            raise
        if exc.status < 400:
            raise
        wire = guess_wire(request.path, request.headers)
        kind: ErrorKind | None = None
        if exc.status == 404:
            kind = ErrorKind.NO_ROUTE  # not a missing model: the URL itself is unknown
            message = f"Unknown request URL: {request.method} {request.path}."
        elif exc.status == 405:
            message = f"{request.method} is not allowed on {request.path}"
        else:
            message = exc.reason
        out = error_response(wire, exc.status, message, kind=kind)
        return answered(request, out, reason_for(exc.status, kind), message)
    except ConnectionResetError:
        # The client left while its reply was being written: nothing to answer, nothing
        # wrong with the gateway. The reply in progress is handed back for aiohttp to close.
        log.debug("client went away: %s %s", request.method, request.path)
        return request.get(PREPARED) or web.Response(status=400)
    except asyncio.CancelledError:
        # aiohttp cancels the handler of a connection that closed (handler_cancellation).
        log.debug("client went away: %s %s (cancelled)", request.method, request.path)
        raise
    except TimeoutError:
        raise
    except Exception:
        log.exception("unexpected error on %s %s", request.method, request.path)
        prepared = request.get(PREPARED)
        if isinstance(prepared, web.StreamResponse):
            # Never a second response inside a body already on its way: close the stream.
            return prepared
        wire = guess_wire(request.path, request.headers)
        out = error_response(wire, 500, "internal gateway error; see the gateway's log")
        return answered(request, out, "internal_error")
