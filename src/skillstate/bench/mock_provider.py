"""A minimal, fast provider for overhead benchmarks: a fixed chat completion, or the same as a
stream of chunks; on the Messages and Responses routes a fixed reply of theirs (not streamed:
the history benchmark's wires). It does as little as possible so that what the benchmark
measures is the gateway, not the fake.

Run: ``python -m skillstate.bench.mock_provider PORT``.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable

from aiohttp import web

from skillstate.support import jsonio
from skillstate.support.eventloop import new_loop

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


_MESSAGE = jsonio.dumps(
    {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "bench-model",
        "content": [{"type": "text", "text": "ok " * CHUNKS}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": CHUNKS},
    }
)

_RESPONSE = jsonio.dumps(
    {
        "id": "resp_bench",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": "bench-model",
        "output": [
            {
                "type": "message",
                "id": "msg_bench",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok " * CHUNKS, "annotations": []}],
            }
        ],
        "usage": {"input_tokens": 100, "output_tokens": CHUNKS, "total_tokens": 116},
    }
)


def _fixed(reply: bytes) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def answer(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=reply, content_type="application/json")

    return answer


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
    app.router.add_post("/v1/messages", _fixed(_MESSAGE))
    app.router.add_post("/v1/responses", _fixed(_RESPONSE))
    return app


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9797
    web.run_app(build(), host="127.0.0.1", port=port, access_log=None, print=None, loop=new_loop())


if __name__ == "__main__":
    main()
