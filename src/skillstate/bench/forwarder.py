"""The bare forwarder: the floor for a Python proxy on aiohttp, a benchmark baseline for
``skillstate bench overhead`` (the ``forwarder`` arm), not a product path.

It forwards each POST's raw body to the same path on the upstream, through one shared
``aiohttp.ClientSession`` with a pooled connector, and relays the status, the content type and
the body back (an event stream chunk by chunk, as the chunks arrive), and does nothing else: no
parsing, no headers beyond the content type, no lanes. What the gateway's pass-through (``off``)
adds over this arm is what skillstate itself costs; what this arm adds over ``direct`` is what
any aiohttp proxy costs on this machine.

Run: ``python -m skillstate.bench.forwarder --port P --upstream URL``.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from skillstate.support.eventloop import new_loop

#: As the mock's: any body the benchmark sends is read.
MAX_BODY_BYTES = 64 * 1024 * 1024
_SESSION = web.AppKey("session", aiohttp.ClientSession)
_UPSTREAM = web.AppKey("upstream", str)


async def _forward(request: web.Request) -> web.StreamResponse:
    body = await request.read()
    session = request.app[_SESSION]
    url = request.app[_UPSTREAM] + request.rel_url.raw_path_qs
    headers = {"content-type": request.headers.get("content-type", "application/json")}
    async with session.post(url, data=body, headers=headers) as reply:
        kind = reply.headers.get("content-type", "application/octet-stream")
        if not kind.startswith("text/event-stream"):
            payload = await reply.read()
            return web.Response(status=reply.status, body=payload, headers={"content-type": kind})
        out = web.StreamResponse(status=reply.status, headers={"content-type": kind})
        await out.prepare(request)
        async for chunk in reply.content.iter_any():
            await out.write(chunk)
        await out.write_eof()
        return out


def build(upstream: str) -> web.Application:
    """The forwarder's application, in front of ``upstream`` (a base URL)."""
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app[_UPSTREAM] = upstream.rstrip("/")

    async def session(app: web.Application) -> AsyncIterator[None]:
        connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=60)
        timeout = aiohttp.ClientTimeout(total=None)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as shared:
            app[_SESSION] = shared
            yield

    app.cleanup_ctx.append(session)
    app.router.add_post("/{tail:.*}", _forward)
    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m skillstate.bench.forwarder")
    parser.add_argument("--port", type=int, default=9798)
    parser.add_argument("--upstream", required=True, help="The upstream's base URL.")
    args = parser.parse_args(argv)
    web.run_app(
        build(args.upstream),
        host="127.0.0.1",
        port=args.port,
        access_log=None,
        print=None,
        loop=new_loop(),
    )


if __name__ == "__main__":
    main()
