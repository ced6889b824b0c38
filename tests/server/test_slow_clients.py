"""Clients that hold connections: a request head or a body that never finishes (slowloris), more
connections than the gateway holds at once, and clients that leave mid-stream. Real sockets
against a real gateway."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import struct
import time
from collections.abc import AsyncIterator

import pytest

from skillstate.support.eventloop import new_loop
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.recording import RecordedRequest

CHAT = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


@contextlib.asynccontextmanager
async def _connected(url: str) -> AsyncIterator[Connection]:
    reader, writer = await asyncio.open_connection(*_address(url))
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def _until_closed(reader: asyncio.StreamReader, limit: float) -> tuple[float, bytes]:
    """Seconds until the gateway closed the connection, and what it sent before."""
    started = time.monotonic()
    got = b""
    with contextlib.suppress(ConnectionResetError):
        async with asyncio.timeout(limit):
            while chunk := await reader.read(65536):
                got += chunk
    return time.monotonic() - started, got


def _head(url: str, path: str, length: int) -> bytes:
    host, port = _address(url)
    return (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


# --- slow requests -----------------------------------------------------------------------------


async def test_a_request_head_that_stalls_is_closed_within_the_header_timeout() -> None:
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, settings={"header_timeout": "0.5"}) as gw,
    ):
        async with _connected(gw.url) as (reader, writer):
            started = time.monotonic()
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            await writer.drain()
            for _ in range(3):  # a byte now and then does not keep it open
                await asyncio.sleep(0.1)
                writer.write(b"X")
            _, got = await _until_closed(reader, limit=5)
            elapsed = time.monotonic() - started
        assert 0.45 < elapsed < 2, elapsed
        assert got == b""
        assert up.requests == []


async def test_a_connection_that_sends_nothing_is_closed_within_the_header_timeout() -> None:
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, settings={"header_timeout": "0.5"}) as gw,
    ):
        async with _connected(gw.url) as (reader, _):
            elapsed, _ = await _until_closed(reader, limit=5)
        assert elapsed < 2, elapsed


async def test_a_kept_alive_connection_idle_past_the_header_timeout_is_closed() -> None:
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, settings={"header_timeout": "0.5"}) as gw,
    ):
        async with _connected(gw.url) as (reader, writer):
            body = json.dumps(CHAT).encode()
            writer.write(_head(gw.url, "/v1/chat/completions", len(body)) + body)
            status = await reader.readline()
            assert status.startswith(b"HTTP/1.1 200"), status
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\n")  # the next head stalls
            elapsed, _ = await _until_closed(reader, limit=5)
        assert elapsed < 2, elapsed


async def test_a_body_that_stalls_is_refused_with_408_and_closed() -> None:
    settings = {"body_timeout": "0.5"}
    async with ScriptedUpstream() as up, gateway_for(up.url, settings=settings) as gw:
        async with _connected(gw.url) as (reader, writer):
            writer.write(_head(gw.url, "/v1/messages", 1000) + b'{"model": ')
            await writer.drain()
            elapsed, got = await _until_closed(reader, limit=10)
        assert got.startswith(b"HTTP/1.1 408"), got[:100]
        error = json.loads(got.split(b"\r\n\r\n", 1)[1])
        assert error["type"] == "error" and "0.5 s" in error["error"]["message"]
        assert elapsed < 4, elapsed  # the timeout, then a short linger for the refusal
        assert up.requests == []


async def test_requests_within_the_timeouts_are_served_on_one_connection() -> None:
    settings = {"header_timeout": "0.5", "body_timeout": "0.5"}
    async with ScriptedUpstream() as up, gateway_for(up.url, settings=settings) as gw:
        async with _connected(gw.url) as (reader, writer):
            body = json.dumps(CHAT).encode()
            for _ in range(3):
                writer.write(_head(gw.url, "/v1/chat/completions", len(body)) + body)
                assert (await reader.readline()).startswith(b"HTTP/1.1 200")
                length = 0
                while (line := await reader.readline()) != b"\r\n":
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                await asyncio.sleep(0.3)  # idle, but less than the timeout each time
        assert len(up.requests) == 3


# --- the connection cap ----------------------------------------------------------------------


async def test_past_max_connections_a_connection_is_refused_with_503() -> None:
    settings = {"max_connections": "2", "header_timeout": "30"}
    async with ScriptedUpstream() as up, gateway_for(up.url, settings=settings) as gw:
        async with _connected(gw.url), _connected(gw.url) as (_, second):
            await asyncio.sleep(0.1)  # both accepted
            async with _connected(gw.url) as (reader, _):
                elapsed, got = await _until_closed(reader, limit=5)
            assert got.startswith(b"HTTP/1.1 503"), got
            assert b"retry-after: 1" in got.lower()
            assert elapsed < 1
            second.close()
            await asyncio.sleep(0.1)
            # A freed place serves the next connection.
            async with _connected(gw.url) as (reader, writer):
                body = json.dumps(CHAT).encode()
                writer.write(_head(gw.url, "/v1/chat/completions", len(body)) + body)
                assert (await reader.readline()).startswith(b"HTTP/1.1 200")
        # The refusal is counted like the gateway's others (local_answers).
        assert gw.context.recorder is not None
        metrics = gw.context.recorder.metrics.text().decode()
        expected = 'skillstate_refused_total{reason="too_many_connections",status="503"} 1.0'
        assert expected in metrics


async def test_a_storm_of_idle_connections_is_capped_and_cleared() -> None:
    """More stalled connections than the cap: the extra ones are refused at once, and the held
    ones are gone after the header timeout, so the gateway serves again."""
    settings = {"max_connections": "20", "header_timeout": "0.5"}
    async with ScriptedUpstream() as up, gateway_for(up.url, settings=settings) as gw:
        storm = [await asyncio.open_connection(*_address(gw.url)) for _ in range(60)]
        try:
            for _, writer in storm:
                writer.write(b"GET /health HTTP/1.1\r\n")
            ends = await asyncio.gather(*(_until_closed(r, limit=5) for r, _ in storm))
        finally:
            for _, writer in storm:
                writer.close()
        refused = [got for _, got in ends if got.startswith(b"HTTP/1.1 503")]
        assert len(refused) == 40
        assert all(elapsed < 2 for elapsed, _ in ends)
        async with _connected(gw.url) as (reader, writer):
            body = json.dumps(CHAT).encode()
            writer.write(_head(gw.url, "/v1/chat/completions", len(body)) + body)
            assert (await reader.readline()).startswith(b"HTTP/1.1 200")


# --- clients that leave mid-stream -----------------------------------------------------------


def _long(_: RecordedRequest) -> Reply:
    return Reply(" ".join(f"w{i}" for i in range(5000)))


async def _abort_mid_stream(url: str, path: str, body: bytes) -> None:
    reader, writer = await asyncio.open_connection(*_address(url))
    writer.write(_head(url, path, len(body)) + body)
    await writer.drain()
    await reader.read(100)  # the stream has begun
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()  # a reset, as a killed client leaves it


async def _abort_storm(wire: str, count: int) -> None:
    body = json.dumps({**CHAT, "stream": True}).encode()
    async with ScriptedUpstream(_long) as up, gateway_for(up.url, wire=wire) as gw:
        await asyncio.gather(
            *(_abort_mid_stream(gw.url, "/v1/chat/completions", body) for _ in range(count))
        )
        await asyncio.sleep(0.5)  # the gateway notices and winds each one down


@pytest.mark.parametrize("wire", ["auto", "anthropic-messages", "openai-responses"])
def test_a_client_that_leaves_mid_stream_is_one_debug_line(
    wire: str, caplog: pytest.LogCaptureFixture
) -> None:
    """On the loop the gateway runs on (uvloop where installed), where a write to a client
    that left can fail before aiohttp notices the reset: no traceback, no warning that blames
    the upstream, at most one debug line per request."""
    count = 20
    caplog.set_level(logging.DEBUG)
    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(_abort_storm(wire, count))
    noisy = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert noisy == [], [r.getMessage() for r in noisy]
    gone = [r for r in caplog.records if r.getMessage().startswith("client went away")]
    assert 1 <= len(gone) <= count
    assert all(r.levelno == logging.DEBUG and r.name == "skillstate.server" for r in gone)
