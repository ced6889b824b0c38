"""The HTTP routes, fed mutants of the corpus and broken bytes through a real gateway on
loopback in front of the scripted upstream: a served reply or a 4xx in the client's own wire,
never a 5xx, and nothing logged as a gateway failure (an unexpected error, a lane that
failed, a body an adapter did not check).

One gateway serves the whole module, from a thread with its own event loop, so that each
example is one HTTP exchange over a kept-alive connection."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from fuzz_corpus import load, mutants, seeds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillstate.conversation import Wire
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for

ROUTES = [
    ("/v1/chat/completions", Wire.CHAT),
    ("/v1/responses", Wire.RESPONSES),
    ("/v1/messages", Wire.MESSAGES),
    ("/v1/messages/count_tokens", Wire.MESSAGES),
    ("/v1/responses/compact", Wire.RESPONSES),
]
FUZZ = settings(
    max_examples=250,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


class _Failures(logging.Handler):
    """Records of the gateway's own failures, from any thread."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.levelno >= logging.ERROR or "did not check" in text or "failed" in text:
            self.seen.append(f"{record.name}: {text}")


class _Gateway:
    """A scripted upstream and a gateway in front of it, on a loop of their own."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._stack = contextlib.AsyncExitStack()
        self.failures = _Failures()

    def __enter__(self) -> _Gateway:
        self._thread.start()
        self.url = self._run(self._start())
        logging.getLogger("skillstate").addHandler(self.failures)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("skillstate").removeHandler(self.failures)
        self._run(self._stack.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _start(self) -> str:
        up = await self._stack.enter_async_context(ScriptedUpstream())
        gateway = await self._stack.enter_async_context(gateway_for(up.url))
        return str(gateway.url)


@pytest.fixture(scope="module")
def gateway() -> Iterator[_Gateway]:
    with _Gateway() as running:
        yield running


@pytest.fixture(scope="module")
def client(gateway: _Gateway) -> Iterator[http.client.HTTPConnection]:
    host, port = gateway.url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    yield connection
    connection.close()


def _post(
    connection: http.client.HTTPConnection, path: str, body: bytes, mode: str
) -> tuple[int, bytes, str]:
    headers = {"Content-Type": "application/json", "x-skillstate-mode": mode}
    try:
        connection.request("POST", path, body=body, headers=headers)
        reply = connection.getresponse()
    except (http.client.HTTPException, OSError):  # the gateway closed a kept-alive connection
        connection.close()
        connection.request("POST", path, body=body, headers=headers)
        reply = connection.getresponse()
    data = reply.read()
    if reply.getheader("connection", "").lower() == "close":
        connection.close()
    return reply.status, data, reply.getheader("content-type", "")


def _check_error(wire: Wire, data: bytes, content_type: str) -> None:
    assert content_type.startswith("application/json"), content_type
    body = json.loads(data)
    if wire is Wire.MESSAGES:
        assert body["type"] == "error" and isinstance(body["error"]["message"], str)
    else:
        assert isinstance(body["error"]["message"], str) and "type" in body["error"]


@st.composite
def _bodies(draw: st.DrawFn, wire: Wire) -> bytes:
    """A mutated request of ``wire``, or its bytes broken: cut short, a byte changed, or
    spliced with something a JSON reader or writer chokes on."""
    seed = draw(st.sampled_from([load(path) for path in seeds(wire, "request")]))
    raw = json.dumps(draw(mutants(seed)), ensure_ascii=False).encode()
    how = draw(st.sampled_from(["json", "json", "json", "cut", "byte", "splice"]))
    if how == "cut":
        return raw[: draw(st.integers(0, len(raw)))]
    if how == "byte":
        at = draw(st.integers(0, len(raw) - 1))
        return raw[:at] + bytes([draw(st.integers(0, 255))]) + raw[at + 1 :]
    if how == "splice":
        hostile = draw(
            st.sampled_from(
                [
                    b'"\\ud800"',
                    b"1" * 25,
                    b"[" * 200 + b"]" * 200,
                    b"[" * 2000 + b"]" * 2000,
                    b"NaN",
                    b"1e999",
                    b'"\xff\xfe"',
                    b"{}",
                ]
            )
        )
        at = raw.find(b":", draw(st.integers(0, len(raw) - 1)))
        return raw if at < 0 else raw[: at + 1] + hostile + b"," + raw[at + 1 :]
    return raw


@pytest.mark.parametrize(("path", "wire"), ROUTES, ids=[path for path, _ in ROUTES])
@FUZZ
@given(data=st.data(), mode=st.sampled_from(["hybrid", "off", "paper"]))
def test_routes_answer_hostile_bodies_with_a_4xx_in_the_wire(
    gateway: _Gateway,
    client: http.client.HTTPConnection,
    path: str,
    wire: Wire,
    data: st.DataObject,
    mode: str,
) -> None:
    body = data.draw(_bodies(wire))
    status, reply, content_type = _post(client, path, body, mode)
    assert status < 500, reply[:500]
    if status >= 400:
        _check_error(wire, reply, content_type)
    assert gateway.failures.seen == []
