"""The pooled HTTP client the gateway talks to providers with (aiohttp)."""

from __future__ import annotations

import io

import aiohttp


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
        # As a file-like payload: aiohttp writes it in chunks, yielding to the loop between
        # them, where a plain bytes body over 1 MB (a long session's history) makes it warn
        # (ResourceWarning) that the write may hold the event loop.
        return self.session.post(url, data=io.BytesIO(body), headers=headers)

    def get(
        self, url: str, headers: dict[str, str], *, timeout: float | None = None
    ) -> aiohttp.client._RequestContextManager:
        limit = aiohttp.ClientTimeout(total=timeout) if timeout else None
        return self.session.get(url, headers=headers, timeout=limit)
