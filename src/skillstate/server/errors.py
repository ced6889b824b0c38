"""Error replies in the client's own wire shape."""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from skillstate import jsonio
from skillstate.conversation import ErrorKind, Wire
from skillstate.protocols import adapter, kind_for_status


def error_response(
    wire: Wire,
    status: int,
    message: str,
    *,
    kind: ErrorKind | None = None,
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    body = adapter(wire).error_body(status, kind or kind_for_status(status), message)
    return web.Response(
        status=status,
        body=jsonio.dumps(body),
        content_type="application/json",
        headers=headers,
    )


def guess_wire(path: str, headers: Mapping[str, str]) -> Wire:
    """For replies to requests no route claimed: whose error shape would the caller read?"""
    if "messages" in path or "anthropic-version" in headers:
        return Wire.MESSAGES
    if "responses" in path:
        return Wire.RESPONSES
    return Wire.CHAT
