"""A loopback TCP proxy that can be cut and restored, to stop a server (PostgreSQL, Redis) as
its clients see it without stopping the machine's own: ``cut`` closes every connection through
it and stops listening, so that connecting is refused as it is to a stopped server;
``restore`` listens again on the same port.

    async with TcpProxy(5432) as proxy:
        url = proxy.url("postgresql://postgres@127.0.0.1:5432/test")
        ...
        await proxy.cut()
        ...
        await proxy.restore()
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit, urlunsplit

_CHUNK = 64 * 1024


class TcpProxy:
    """Relays 127.0.0.1:``port`` (its own, picked free) to 127.0.0.1:``target``."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Self:
        await self.restore()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.cut()

    def url(self, url: str) -> str:
        """``url`` with its host and port replaced by the proxy's."""
        parts = urlsplit(url)
        user = parts.netloc.rpartition("@")[0]
        netloc = f"{user}@127.0.0.1:{self.port}" if user else f"127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    async def restore(self) -> None:
        """Listen (again, on the same port once it has one)."""
        if self._server is not None:
            return
        if not self.port:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]
        self._server = await asyncio.start_server(
            self._relay, "127.0.0.1", self.port, reuse_address=True
        )

    async def cut(self) -> None:
        """Stop listening and close every connection through the proxy, both ends."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if server is not None:
            with contextlib.suppress(Exception):
                await server.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        upstream: asyncio.StreamWriter | None = None
        try:
            up_reader, upstream = await asyncio.open_connection("127.0.0.1", self.target)
            self._writers.add(upstream)
            await asyncio.gather(_pump(reader, upstream), _pump(up_reader, writer))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            for end in (writer, upstream):
                if end is not None:
                    self._writers.discard(end)
                    end.transport.abort()
            self._tasks.discard(task)


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    while chunk := await source.read(_CHUNK):
        sink.write(chunk)
        await sink.drain()
    if sink.can_write_eof():
        sink.write_eof()
