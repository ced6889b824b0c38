"""The MCP server over a data directory's stores, and serving it over stdio.

Built on the SDK's low-level ``mcp.server.lowlevel.Server`` (mcp 2.x): the tools have fixed
JSON schemas and the resource list is read from the stores on each request, which the
decorator-based ``MCPServer`` would have to rebuild as registered objects.

Over stdio, stdout is the protocol: the SDK's ``stdio_server`` points fd 1 at stderr while it
serves (a stray print cannot tear a frame), and every diagnostic here goes to the
``skillstate.mcp`` logger, which ``serve_stdio`` sends to stderr.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from skillstate import __version__
from skillstate.archive import Archive
from skillstate.config import Settings
from skillstate.mcp.resources import MIME_TYPE, URI_TEMPLATE, list_entries, ref_of
from skillstate.mcp.tools import TOOL_SCHEMAS, McpTools
from skillstate.state.schema import Bounds, StateSchema
from skillstate.storage.stores import open_stores

log = logging.getLogger("skillstate.mcp")

NAME = "skillstate"
INSTRUCTIONS = (
    "skillstate keeps long texts out of your context: `compress` archives one exactly and "
    "answers with a compact view and a ref; `retrieve` reads it back whole, a page at a time, "
    "or only the lines matching a query. `state` reads or patches a session's execution "
    "state. Archived spans are also resources at skillstate://archive/{ref}."
)

Context = ServerRequestContext[Any]


def build_server(tools: McpTools) -> Server[Any]:
    """A server answering ``tools/list``, ``tools/call``, ``resources/list``,
    ``resources/templates/list`` and ``resources/read`` with ``tools``."""

    async def list_tools(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=description, input_schema=schema)
                for name, (description, schema) in TOOL_SCHEMAS.items()
            ]
        )

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            answer = await tools.call(params.name, params.arguments)
        except Exception as error:  # a store failing mid-call: an error result, not a crash
            log.exception("tool %s failed", params.name)
            return _result(f"{params.name} failed: {type(error).__name__}: {error}", True)
        return _result(answer.text, answer.is_error)

    async def list_resources(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        listed = await list_entries(tools.archive, tools.state_store, scope=tools.scope)
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=item.uri,
                    name=item.ref,
                    description=f"session {item.session}: {item.summary}".rstrip(": "),
                    mime_type=MIME_TYPE,
                    size=item.size,
                )
                for item in listed
            ]
        )

    async def list_templates(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            name="archived span",
            uri_template=URI_TEMPLATE,
            description="The exact text of an archived span, by its ref (ar_ and 24 hex).",
            mime_type=MIME_TYPE,
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(
        ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        ref = ref_of(params.uri)
        text = None if ref is None else await tools.read(ref)
        if text is None:
            why = "names no archive ref" if ref is None else "is unknown, or expired"
            raise MCPError(types.INVALID_PARAMS, f"{params.uri} {why}", {"uri": params.uri})
        contents = types.TextResourceContents(uri=params.uri, text=text, mime_type=MIME_TYPE)
        return types.ReadResourceResult(contents=[contents])

    return Server(
        NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def _result(text: str, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], is_error=is_error
    )


async def serve_stdio(settings: Settings) -> None:
    """Serve the stores of ``settings.data_dir`` over stdin and stdout until stdin closes.

    The stores are the files a running gateway uses; SQLite (WAL) lets both write."""
    options = settings.store_options()
    stores = await open_stores(Path(settings.data_dir), options=options, url=settings.store)
    if stores.degraded:
        log.warning("state kept in memory only: %s", stores.degraded)
    bounds = Bounds(
        max_patch_bytes=settings.max_patch_bytes, max_state_bytes=settings.max_state_bytes
    )
    tools = McpTools(
        Archive(stores.archive),
        stores.state,
        StateSchema.from_keys(settings.state_schema, bounds=bounds),
        budget_chars=settings.lanes.options_for("outputs").budget_chars,
        degraded=stores.degraded,
    )
    server = build_server(tools)
    log.info("skillstate MCP server on stdio, data in %s", settings.data_dir)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await stores.close()


def log_to_stderr(verbose: bool) -> None:
    """Send the ``skillstate`` loggers to stderr (never stdout: it carries the protocol)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("skillstate mcp: %(levelname)s %(message)s"))
    root = logging.getLogger("skillstate")
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
