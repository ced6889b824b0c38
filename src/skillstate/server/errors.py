"""Error replies in the client's own wire shape."""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from skillstate.conversation import ErrorKind, Wire
from skillstate.protocols import adapter, kind_for_status
from skillstate.server.replies import UpstreamFailure
from skillstate.support import jsonio


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


def failure_response(
    wire: Wire, failure: UpstreamFailure, headers: Mapping[str, str]
) -> web.Response:
    """An upstream failure before the client's first byte: the upstream's own error body on
    the same wire; across wires its kind and message in the client's shape, under the status
    the client's SDK retries on for an overload (each wire has its own)."""
    merged = {**headers, **failure.headers}
    if failure.wire is wire and failure.body is not None:
        out = web.Response(status=failure.status, body=failure.body, headers=merged)
        out.content_type = failure.content_type or "application/json"
        return out
    status = client_status(wire, failure.status, failure.kind)
    return error_response(wire, status, failure.message, kind=failure.kind, headers=merged)


def client_status(wire: Wire, status: int, kind: ErrorKind) -> int:
    if kind is ErrorKind.OVERLOADED:
        return 529 if wire is Wire.MESSAGES else 503
    return status


def guess_wire(path: str, headers: Mapping[str, str]) -> Wire:
    """For replies to requests no route claimed: whose error shape would the caller read?"""
    if "messages" in path or "anthropic-version" in headers:
        return Wire.MESSAGES
    if "responses" in path:
        return Wire.RESPONSES
    return Wire.CHAT
