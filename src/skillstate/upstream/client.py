"""The pooled HTTP client the gateway talks to providers with (aiohttp)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp

_PIECE = 256 * 1024
"""What one write of a request body to an upstream holds."""


class UpstreamClient:
    """One connection pool for every upstream; started and closed with the server."""

    __slots__ = ("_connect_timeout", "_read_timeout", "_session", "_total_timeout")

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
                skip_auto_headers=("User-Agent",),
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

    def post(
        self, url: str, body: bytes, headers: dict[str, str]
    ) -> aiohttp.client._RequestContextManager:
        if len(body) <= _PIECE:
            return self.session.post(url, data=body, headers=headers)
        # A body of megabytes (a long session's history, a big tool result) goes out a piece
        # at a time, each a view of the body, never a copy: one write of it all would hold
        # the event loop (aiohttp warns of it), and a file-like payload copies it first.
        headers["content-length"] = str(len(body))
        return self.session.post(url, data=_pieces(body), headers=headers)

    def get(
        self, url: str, headers: dict[str, str], *, timeout: float | None = None
    ) -> aiohttp.client._RequestContextManager:
        limit = aiohttp.ClientTimeout(total=timeout) if timeout else None
        return self.session.get(url, headers=headers, timeout=limit)


async def _pieces(body: bytes) -> AsyncIterator[memoryview]:
    view = memoryview(body)
    for start in range(0, len(view), _PIECE):
        yield view[start : start + _PIECE]
