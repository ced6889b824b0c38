"""The MCP server over the archive and the state: the tools ``compress``, ``retrieve``,
``state`` and ``stats``, and each archived span as a resource (``skillstate://archive/{ref}``).
``skillstate mcp`` serves it over stdio, the gateway over streamable HTTP at ``/mcp``
(``server.mcp_route``; docs/mcp.md). The SDK is imported only by ``mcp.server``, never by
this package's names: the rest of skillstate does not load it.
"""

from skillstate.mcp.resources import URI_PREFIX, URI_TEMPLATE
from skillstate.mcp.tools import DEFAULT_SESSION, TOOL_SCHEMAS, McpTools, ToolAnswer

__all__ = [
    "DEFAULT_SESSION",
    "TOOL_SCHEMAS",
    "URI_PREFIX",
    "URI_TEMPLATE",
    "McpTools",
    "ToolAnswer",
]
