"""A minimal, fast OpenAI-style provider for overhead benchmarks: a fixed chat completion, or
the same as a stream of chunks. It does as little as possible so that what the benchmark
measures is the gateway, not the fake.

Run: ``python -m skillstate.bench.mock_provider PORT``.
"""

from __future__ import annotations

import sys

from aiohttp import web

from skillstate import jsonio
from skillstate.eventloop import new_loop

CHUNKS = 16

_COMPLETION = jsonio.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "bench-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok " * CHUNKS},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": CHUNKS, "total_tokens": 116},
    }
)


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "bench-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + jsonio.dumps(body) + b"\n\n"


_STREAM = [_chunk({"role": "assistant", "content": ""})]
_STREAM += [_chunk({"content": "ok "}) for _ in range(CHUNKS)]
_STREAM += [_chunk({}, "stop"), b"data: [DONE]\n\n"]


def _streamed(body: bytes) -> bool:
    """Whether the request asks for a stream, found without copying a body of megabytes."""
    at = body.find(b'"stream"')
    return at >= 0 and body[at + 8 : at + 24].lstrip(b" :\t\r\n").startswith(b"true")


async def _chat(request: web.Request) -> web.StreamResponse:
    body = await request.read()
    if not _streamed(body):
        return web.Response(body=_COMPLETION, content_type="application/json")
    out = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await out.prepare(request)
    for chunk in _STREAM:
        await out.write(chunk)
    await out.write_eof()
    return out


#: Larger than the gateway's own limit, so that any body the gateway forwards is read.
MAX_BODY_BYTES = 64 * 1024 * 1024


def build() -> web.Application:
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_post("/v1/chat/completions", _chat)
    return app


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9797
    web.run_app(build(), host="127.0.0.1", port=port, access_log=None, print=None, loop=new_loop())


if __name__ == "__main__":
    main()
