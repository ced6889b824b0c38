"""The MCP server at ``/mcp`` on the gateway, driven by the SDK's own streamable HTTP client:
the same tools as over stdio, over the gateway's own archive and state, behind the gateway's
guard (a token set: none without it)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from skillstate.testing.gateway import gateway_for

LOG = "\n".join(f"[{n:05d}] INFO step {n} ok" for n in range(2_000)) + "\nZEBRA-42 found\n"


@asynccontextmanager
async def connected(
    url: str, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=30) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    item = result.content[0]
    assert isinstance(item, types.TextContent)
    return item.text


async def call(client: ClientSession, name: str, **arguments: Any) -> types.CallToolResult:
    return await client.call_tool(name, arguments)


async def test_the_tools_answer_over_http_on_the_gateway() -> None:
    async with gateway_for() as gw, connected(gw.url + "/mcp") as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert names == ["compress", "retrieve", "state", "stats"]
        compressed = json.loads(text_of(await call(client, "compress", content=LOG)))
        assert compressed["tokens_after"] < compressed["tokens_before"]
        found = await call(client, "retrieve", ref=compressed["ref"], query="ZEBRA-42")
        assert not found.is_error and "ZEBRA-42 found" in text_of(found)
        # What MCP archived is the gateway's own archive: the engine reads it too.
        assert gw.context.engine is not None
        assert await gw.context.engine.archive.span(compressed["ref"]) is not None
        patched = await call(client, "state", session="s1", patch={"objective": "ship it"})
        assert not patched.is_error and "ship it" in text_of(patched)
        missing = await call(client, "retrieve", ref="ar_" + "0" * 24)
        assert missing.is_error


async def test_mcp_is_behind_the_gateways_token() -> None:
    async with gateway_for(environ={"SKILLSTATE_AUTH_TOKEN": "t0k3n-for-the-tests"}) as gw:
        async with httpx2.AsyncClient() as http:
            refused = await http.post(gw.url + "/mcp", json={"jsonrpc": "2.0", "id": 1})
            assert refused.status_code == 401
        headers = {"authorization": "Bearer t0k3n-for-the-tests"}
        async with connected(gw.url + "/mcp", headers) as client:
            assert (await client.list_tools()).tools
