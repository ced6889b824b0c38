"""The listening socket: at most ``max_connections`` connections held at once, and none kept
open by a client that never finishes sending a request head.

A client that opens connections and sends nothing, or a request head a byte at a time
(slowloris), would otherwise hold a file descriptor each until the process runs out of them
(1,024 by default) and no agent can connect. Past the cap a new connection gets ``503`` and
is closed at once (seen like the gateway's other refusals: ``local_answers``, with no request
line, since none was read). A connection's first request head must arrive within ``header_timeout``
seconds; the heads after it are bounded by aiohttp's keep-alive timer, which the composition
root sets to the same number and which also closes a connection idle that long between
requests.
"""

from __future__ import annotations

import asyncio
import logging
from typing import cast

from aiohttp import web

from skillstate.server.local_answers import LocalAnswer, report_refused

log = logging.getLogger("skillstate.server")

_HEAD_END = b"\r\n\r\n"
_BUSY_ANSWER = LocalAnswer("too_many_connections", "too many open connections")
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"retry-after: 1\r\n"
    b"connection: close\r\n"
    b"content-length: 52\r\n"
    b"\r\n"
    b"skillstate: too many open connections; retry later\n"
)


class Listener(web.BaseSite):
    """A TCP site (like ``web.TCPSite``) whose connections are counted and timed."""

    __slots__ = (
        "_host",
        "_port",
        "_reuse_port",
        "app",
        "header_timeout",
        "held",
        "max_connections",
        "refusing",
    )

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        *,
        max_connections: int,
        header_timeout: float,
        reuse_port: bool = False,
    ) -> None:
        super().__init__(runner)
        self._host = host
        self._port = port
        self._reuse_port = reuse_port
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.held = 0
        self.refusing = False
        self.app = runner.app if isinstance(runner, web.AppRunner) else None

    @property
    def name(self) -> str:
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self, server()),
            self._host,
            self._port,
            backlog=self._backlog,
            reuse_port=self._reuse_port or None,
        )

    def admit(self) -> bool:
        """Count a new connection; False when it is one too many (logged once per run of
        refusals, not once per connection)."""
        if self.held >= self.max_connections:
            if not self.refusing:
                log.warning(
                    "%d connections are open, the most allowed (max_connections): "
                    "refusing new ones until some close",
                    self.held,
                )
            self.refusing = True
            return False
        self.held += 1
        return True

    def release(self) -> None:
        self.held -= 1
        self.refusing = False


class _Connection(asyncio.Protocol):
    """One client connection in front of aiohttp's own protocol, which does all the HTTP."""

    def __init__(self, listener: Listener, inner: asyncio.Protocol) -> None:
        self._listener = listener
        self._inner = inner
        self._admitted = False
        self._watch: asyncio.TimerHandle | None = None
        self._tail = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        stream = cast(asyncio.Transport, transport)
        if not self._listener.admit():
            stream.write(_BUSY)
            stream.close()
            report_refused(self._listener.app, "-", "-", 503, _BUSY_ANSWER, 0.0)
            return
        self._admitted = True
        loop = asyncio.get_running_loop()
        self._watch = loop.call_later(self._listener.header_timeout, self._expire, stream)
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if not self._admitted:
            return
        if self._watch is not None:
            seen = self._tail + data
            if _HEAD_END in seen:
                self._watch.cancel()
                self._watch = None
            else:
                self._tail = seen[-(len(_HEAD_END) - 1) :]
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._admitted else None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._admitted:
            return
        if self._watch is not None:
            self._watch.cancel()
        self._listener.release()
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def _expire(self, transport: asyncio.Transport) -> None:
        self._watch = None
        timeout = self._listener.header_timeout
        log.debug("closed a connection that sent no whole request head in %g s", timeout)
        transport.close()
