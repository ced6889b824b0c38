"""The MCP server over the archive and the state: the tools ``compress``, ``retrieve``,
``state`` and ``stats``, and each archived span as a resource (``skillstate://archive/{ref}``).
``skillstate mcp`` serves it over stdio (docs/mcp.md)."""

from skillstate.mcp.resources import URI_PREFIX, URI_TEMPLATE
from skillstate.mcp.server import build_server, serve_stdio
from skillstate.mcp.tools import DEFAULT_SESSION, TOOL_SCHEMAS, McpTools, ToolAnswer

__all__ = [
    "DEFAULT_SESSION",
    "TOOL_SCHEMAS",
    "URI_PREFIX",
    "URI_TEMPLATE",
    "McpTools",
    "ToolAnswer",
    "build_server",
    "serve_stdio",
]
