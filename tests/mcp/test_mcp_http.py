"""The MCP server at ``/mcp`` on the gateway, driven by the SDK's own streamable HTTP client:
the same tools as over stdio, over the gateway's own archive and state, behind the gateway's
guard (a token set: none without it)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import mcp_types as types
from mcp import ClientSession

from skillstate.testing.gateway import gateway_for
from skillstate.testing.mcp_client import connected, text_of

LOG = "\n".join(f"[{n:05d}] INFO step {n} ok" for n in range(2_000)) + "\nZEBRA-42 found\n"


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
