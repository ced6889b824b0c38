"""The pooled HTTP client the gateway talks to providers with (aiohttp).

A call has three limits: ``connect_timeout`` to connect, the caller's ``first_byte_s`` for the
reply's headers once the request is sent, and ``read_timeout`` for each silence after them (a
stream that stalls), all under ``total_timeout``. aiohttp's one read timeout (``sock_read``)
counts from the request sent to the headers and then between reads, so a call asks it for the
first-byte limit and, once the headers came, sets it to the read limit (a reply slower to start
than a stream may be idle is still served)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp

_PIECE = 256 * 1024
"""What one write of a request body to an upstream holds."""


class UpstreamClient:
    """One connection pool for every upstream; started and closed with the server."""

    __slots__ = ("_connect_timeout", "_read_timeout", "_session", "_timeouts", "_total_timeout")

    def __init__(
        self,
        *,
        connect_timeout: float = 10.0,
        total_timeout: float = 600.0,
        read_timeout: float | None = None,
    ) -> None:
        self._connect_timeout = connect_timeout
        self._total_timeout = total_timeout
        self._read_timeout = read_timeout
        """The longest silence while reading a reply (a stream that stalls)."""
        self._session: aiohttp.ClientSession | None = None
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}

    async def start(self) -> None:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, enable_cleanup_closed=True)
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(
                    total=self._total_timeout,
                    sock_connect=self._connect_timeout,
                    sock_read=self._read_timeout,
                ),
                auto_decompress=True,
            )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("upstream client used before start()")
        return self._session

    async def post(
        self, url: str, body: bytes, headers: dict[str, str], first_byte_s: float
    ) -> aiohttp.ClientResponse:
        """The reply once its headers came, ``first_byte_s`` at most after the request was
        sent (``TimeoutError`` past it, or when it is not above 0)."""
        if first_byte_s <= 0:
            raise TimeoutError("no time left for the call")
        timeout = self._timeouts.get(first_byte_s)
        if timeout is None:
            timeout = aiohttp.ClientTimeout(
                total=self._total_timeout,
                sock_connect=self._connect_timeout,
                sock_read=first_byte_s,
            )
            if len(self._timeouts) < 8:  # the configured limit, and a few deadline-cut ones
                self._timeouts[first_byte_s] = timeout
        data: bytes | AsyncIterator[memoryview] = body
        if len(body) > _PIECE:
            # A body of megabytes (a long session's history, a big tool result) goes out a
            # piece at a time, each a view of the body, never a copy: one write of it all
            # would hold the event loop (aiohttp warns of it), and a file-like payload copies
            # it first.
            headers["content-length"] = str(len(body))
            data = _pieces(body)
        reply = await self.session.post(
            url, data=data, headers=headers, timeout=timeout, skip_auto_headers=_agent(headers)
        )
        connection = reply.connection
        if connection is not None and connection.protocol is not None:
            connection.protocol.read_timeout = self._read_timeout  # from now on, between reads
            connection.protocol.start_timeout()
        return reply

    def get(
        self, url: str, headers: dict[str, str], *, timeout: float | None = None
    ) -> aiohttp.client._RequestContextManager:
        limit = aiohttp.ClientTimeout(total=timeout) if timeout else None
        return self.session.get(
            url, headers=headers, timeout=limit, skip_auto_headers=_agent(headers)
        )


_NO_AGENT = ("User-Agent",)


def _agent(headers: dict[str, str]) -> tuple[str, ...] | None:
    """What aiohttp is told not to add: its own ``User-Agent`` where the client sent none (the
    provider sees the client's, or none; never aiohttp's). Asked per call, since aiohttp's
    skip list costs each call that has one a copy of its headers (most carry the client's)."""
    return None if "user-agent" in headers else _NO_AGENT


async def _pieces(body: bytes) -> AsyncIterator[memoryview]:
    view = memoryview(body)
    for start in range(0, len(view), _PIECE):
        yield view[start : start + _PIECE]
