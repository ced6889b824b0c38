"""The HTTP runner: aiohttp's, with the header limits and every error in a wire's
JSON shape.

aiohttp's HTTP parser refuses a request line or header over its size limits, too many
headers, or malformed HTTP before any handler or middleware runs, and answers in plain text
(``RequestHandler.handle_error``); aiohttp offers no hook for it (aio-libs/aiohttp#3287). So
the connection class is ours: the same handler, whose ``handle_error`` answers in the error
shape of the wire the connection speaks. The parser has not kept the failing request's path,
so the wire is guessed from the first request line of the connection (an SDK keeps one
provider's wire on its connections); where even that cannot be read, OpenAI's shape. Each such
answer is seen like the gateway's other refusals (``local_answers.report_refused``), under
that first request line, timed from the connection's first bytes.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, LineTooLong

from skillstate.conversation import ErrorKind, Wire
from skillstate.server.errors import error_response, guess_wire
from skillstate.server.local_answers import LocalAnswer, report_refused

_HEAD_BYTES = 2048
"""How much of a connection's first bytes is kept to guess its wire."""
_TOO_MANY_HEADERS = "Too many headers"
"""How both of aiohttp's parsers begin the message of that error."""


@dataclass(frozen=True, slots=True)
class HeaderLimits:
    """What the parser accepts: ``line_bytes`` for the request line and for each header's
    name and value, and ``count`` headers per request."""

    line_bytes: int = 8190
    count: int = 128


class GatewayRunner(web.AppRunner):
    """``web.AppRunner`` whose connections enforce ``limits`` and answer what the HTTP parser
    refuses in a wire's JSON shape."""

    def __init__(
        self,
        app: web.Application,
        limits: HeaderLimits,
        *,
        shutdown_timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        # The runner's own argument apart; the rest is what aiohttp hands each connection.
        self._server_kwargs = {
            **kwargs,
            "max_line_size": limits.line_bytes,
            "max_field_size": limits.line_bytes,
            "max_headers": limits.count,
        }
        self._limits = limits
        super().__init__(app, shutdown_timeout=shutdown_timeout, **self._server_kwargs)

    async def _make_server(self) -> web.Server:
        plain = await super()._make_server()  # starts the application
        return _Server(
            plain.request_handler,
            request_factory=plain.request_factory,
            loop=asyncio.get_running_loop(),
            limits=self._limits,
            app=self.app,
            **self._server_kwargs,
        )


_SERVER_ONLY = ("request_factory", "handler_cancellation", "loop")


class _Server(web.Server):
    """aiohttp's server, making connections of our class (``Server.__call__`` is the
    protocol factory the listening socket calls)."""

    def __init__(
        self, *args: Any, limits: HeaderLimits, app: web.Application, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._header_limits = limits
        self.app = app
        # What web.Server passes on to each connection: all but its own arguments.
        self._connection_kwargs = {k: v for k, v in kwargs.items() if k not in _SERVER_ONLY}

    def __call__(self) -> web.RequestHandler:
        return _Connection(
            self,
            loop=asyncio.get_running_loop(),
            limits=self._header_limits,
            **self._connection_kwargs,
        )


class _Connection(web.RequestHandler):
    def __init__(self, manager: web.Server, *, limits: HeaderLimits, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._limits = limits
        self._app = manager.app if isinstance(manager, _Server) else None
        self._head = b""
        self._began = 0.0

    def data_received(self, data: bytes) -> None:
        if not self._head:
            self._began = time.perf_counter()
        if len(self._head) < _HEAD_BYTES:
            self._head += data[: _HEAD_BYTES - len(self._head)]
        super().data_received(data)

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        # aiohttp's own: logs, and refuses to answer twice on a response already begun.
        super().handle_error(request, status, exc, message)
        wire = _connection_wire(self._head)
        if isinstance(exc, LineTooLong) or (
            isinstance(exc, BadHttpMessage) and exc.message.startswith(_TOO_MANY_HEADERS)
        ):
            text = (
                f"request headers are too large: the request line and each header may hold at "
                f"most {self._limits.line_bytes:,} bytes, and a request at most "
                f"{self._limits.count:,} headers"
            )
            out = error_response(wire, 431, text, kind=ErrorKind.TOO_LARGE)
            answer = LocalAnswer("headers_too_large", text)
        elif status < 500:
            detail = exc.message if isinstance(exc, BadHttpMessage) else (message or "")
            text = f"malformed HTTP request: {detail.splitlines()[0] if detail else status}"
            out = error_response(wire, status, text, kind=ErrorKind.INVALID_REQUEST)
            answer = LocalAnswer("malformed_http", text)
        else:
            out = error_response(wire, 500, "internal gateway error; see the gateway's log")
            answer = LocalAnswer("internal_error")
        out.force_close()
        method, path = request.method, request.path
        if method == "UNKNOWN":  # aiohttp's stand-in for a request its parser refused
            method, path = _request_line(self._head)
        elapsed = time.perf_counter() - self._began if self._began else 0.0
        report_refused(self._app, method, path, out.status, answer, elapsed)
        return out


def _connection_wire(head: bytes) -> Wire:
    """The wire of a connection's first request line (``POST /v1/messages HTTP/1.1``)."""
    _, path = _request_line(head)
    headers = {"anthropic-version": ""} if b"\nanthropic-version:" in head.lower() else {}
    return guess_wire(path, headers)


def _request_line(head: bytes) -> tuple[str, str]:
    """The method and path (no query) of a connection's first request line, as far as they
    can be read (``?`` for what cannot)."""
    line = head.split(b"\r\n", 1)[0].split(b" ")
    method = line[0].decode("latin-1")[:16] if line[0] else "?"
    path = line[1].split(b"?", 1)[0].decode("latin-1")[:200] if len(line) > 1 else "?"
    return method, path
