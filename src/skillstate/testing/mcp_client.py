"""The MCP SDK's own streamable HTTP client, connected to a gateway's ``/mcp`` for a test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def connected(
    url: str, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised client session to the MCP server at ``url``, sending ``headers``."""
    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=30) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    """The text of a tool's result (its first item)."""
    item = result.content[0]
    assert isinstance(item, types.TextContent)
    return item.text
