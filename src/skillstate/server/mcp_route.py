"""The MCP server (``skillstate.mcp``) over streamable HTTP, at ``/mcp`` on the gateway.

The SDK serves streamable HTTP as an ASGI application; the gateway is aiohttp, so each request
is handed to the SDK's session manager as ASGI (``_scope``, and a ``receive`` / ``send`` pair
over the aiohttp request), and what it sends back becomes the response. Stateless, answering
in JSON: every POST is a whole exchange with one body, so nothing of a client is kept between
requests and nothing needs streaming. The SDK (and what it imports) is
loaded, and its session manager started, on the first request: an idle gateway stays small.

The route sits behind the gateway's guard like every other (the token when one is set, the
allowed hosts and origins), so the SDK's own Host and Origin checks are off: they would repeat
the guard's with a list of their own.

A tenant's key (``server.tenancy``) is served by a server of its own, over tools scoped to the
tenant (``McpTools.scope``): one per tenant that has called, each started on its first request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, MutableMapping
from typing import Any

from aiohttp import web

from skillstate.mcp.tools import McpTools
from skillstate.server.context import GATEWAY
from skillstate.server.tenancy import scope_of

MCP_PATH = "/mcp"

Message = MutableMapping[str, Any]


class McpEndpoint:
    """``/mcp``: the tools ``make_tools`` builds for a scope (on its first request), served
    over HTTP."""

    def __init__(self, make_tools: Callable[[str | None], McpTools]) -> None:
        self._make_tools = make_tools
        self._managers: dict[str | None, Any] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()

    async def handle(self, request: web.Request) -> web.Response:
        manager = await self._started(scope_of(request, request.app[GATEWAY]))
        bridge = _Bridge(await request.read())
        try:
            await manager.handle_request(_scope(request), bridge.receive, bridge.send)
        finally:
            bridge.done.set()
        if bridge.status is None:
            return web.Response(status=500, text="the MCP server gave no answer")
        response = web.Response(status=bridge.status, body=bytes(bridge.body))
        for name, value in bridge.headers:
            if name.lower() not in ("content-length", "transfer-encoding"):
                response.headers.add(name, value)
        return response

    async def close(self) -> None:
        self._stop.set()
        for task in self._tasks:
            await task

    async def _started(self, scope: str | None) -> Any:
        async with self._lock:
            manager = self._managers.get(scope)
            if manager is None:
                from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
                from mcp.server.transport_security import TransportSecuritySettings

                from skillstate.mcp.server import build_server

                manager = StreamableHTTPSessionManager(
                    app=build_server(self._make_tools(scope)),
                    json_response=True,
                    stateless=True,
                    security_settings=TransportSecuritySettings(
                        enable_dns_rebinding_protection=False
                    ),
                )
                running = asyncio.Event()
                task = asyncio.create_task(self._run(manager, running), name="skillstate-mcp")
                self._tasks.append(task)
                await running.wait()
                self._managers[scope] = manager
            return manager

    async def _run(self, manager: Any, running: asyncio.Event) -> None:
        """The session manager's lifetime, in a task of its own: its task group must be left
        by the task that entered it, not by whichever request or shutdown comes last."""
        async with manager.run():
            running.set()
            await self._stop.wait()


class _Bridge:
    """ASGI's ``receive`` and ``send`` for one request: the body in one message, then a
    disconnect once the answer is out; the answer's status, headers and body gathered."""

    def __init__(self, body: bytes) -> None:
        self.request_body: bytes | None = body
        self.status: int | None = None
        self.headers: list[tuple[str, str]] = []
        self.body = bytearray()
        self.done = asyncio.Event()

    async def receive(self) -> Message:
        if self.request_body is not None:
            body, self.request_body = self.request_body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.done.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.headers = [
                (k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])
            ]
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")


async def handle_mcp(request: web.Request) -> web.StreamResponse:
    """``/mcp``: the MCP server, where the gateway serves one (``GatewayContext.mcp``)."""
    endpoint = request.app[GATEWAY].mcp
    if endpoint is None:
        raise web.HTTPNotFound(text="no MCP server here")
    return await endpoint.handle(request)


def _scope(request: web.Request) -> dict[str, Any]:
    """The ASGI scope of ``request``."""
    peer = request.transport.get_extra_info("peername") if request.transport else None
    host, _, port = (request.host or "127.0.0.1").partition(":")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.items()
        ],
        "server": (host, int(port) if port.isdigit() else 80),
        "client": tuple(peer[:2]) if peer else None,
    }
