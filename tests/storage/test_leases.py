"""Leases on a session's boundary (``storage.leases``): one holder at a time, given back by its
holder only, gone by themselves after ``LEASE_S``; over Redis, one holder across processes (two
``RedisLeases`` on the machine's Redis stand for two gateways), and each process's own while
Redis is out of reach. In the engine: a request whose boundary is due while another of its
session holds the lease renders as if it were not due."""

from __future__ import annotations

import logging
import secrets
from typing import Any

import pytest
from redis import asyncio as aioredis

from skillstate.conversation import Message, Request, Text, Tool, ToolCall, ToolResult, Wire
from skillstate.state.engine import StateEngine
from skillstate.state.epoch_record import DOC_NAME
from skillstate.state.mode import Mode
from skillstate.state.options import CollapseOptions
from skillstate.state.prepared import EngineConfig
from skillstate.state.schema import StateSchema
from skillstate.storage import MemoryArchiveStore, MemoryStateStore
from skillstate.storage.leases import KEY_PREFIX, LEASE_S, LocalLeases, RedisLeases


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_a_local_lease_has_one_holder_until_given_back_or_expired() -> None:
    clock = Clock()
    leases = LocalLeases(clock=clock)
    token = await leases.take("s")
    assert token is not None and await leases.take("s") is None
    assert await leases.take("other") is not None
    await leases.give_back("s", "not-its-token")
    assert await leases.take("s") is None
    await leases.give_back("s", token)
    again = await leases.take("s")
    assert again is not None
    clock.now += LEASE_S
    assert await leases.take("s") is not None  # its holder died: gone by itself


async def test_over_redis_one_process_holds_a_sessions_lease(redis_client: Any) -> None:
    redis = redis_client
    session = f"test-{secrets.token_hex(4)}"
    one, two = RedisLeases(redis), RedisLeases(redis)
    token = await one.take(session)
    assert token is not None and await two.take(session) is None
    await two.give_back(session, "not-its-token")
    assert await two.take(session) is None
    ttl = await redis.pttl(KEY_PREFIX + session)
    assert 0 < ttl <= LEASE_S * 1000
    await one.give_back(session, token)
    assert await two.take(session) is not None


async def test_a_redis_out_of_reach_leaves_each_process_its_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    client = aioredis.from_url("redis://127.0.0.1:9/0", socket_connect_timeout=0.5)
    leases = RedisLeases(client)
    token = await leases.take("s")
    assert token is not None and await leases.take("s") is None
    await leases.give_back("s", token)
    assert await leases.take("s") is not None
    said = [r.getMessage() for r in caplog.records if "boundary leases" in r.getMessage()]
    assert len(said) == 1
    await client.aclose()


def _loop(turns: int) -> Request:
    messages = [Message("user", [Text("do the task")])]
    for n in range(turns):
        call = ToolCall(f"c{n}", "read_file", f'{{"path": "src/f{n}.py"}}')
        messages.append(Message("assistant", [call]))
        messages.append(Message("tool", [ToolResult(f"c{n}", [Text("a line of output\n" * 80)])]))
    tools = [Tool("read_file", parameters={"type": "object"})]
    return Request(model="gpt-4.1", messages=messages, source=Wire.CHAT, tools=tools)


async def test_a_boundary_another_request_is_making_is_not_made_twice() -> None:
    leases = LocalLeases()
    store = MemoryStateStore()
    config = EngineConfig(schema=StateSchema.from_keys(None), options=CollapseOptions())
    engine = StateEngine(store, MemoryArchiveStore(), config, leases=leases)
    for turns in range(1, 4):
        prepared = await engine.prepare("s", _loop(turns), Mode.HYBRID, Wire.CHAT)
        assert prepared is not None
        await engine.finish(prepared, None)
    await engine.request_collapse("s")
    held = await leases.take("s")  # another request of the session is making one
    assert held is not None
    waiting = await engine.prepare("s", _loop(4), Mode.HYBRID, Wire.CHAT)
    assert waiting is not None and waiting.epoch is None
    assert await store.get_doc("s", DOC_NAME) is None
    await leases.give_back("s", held)
    await engine.request_collapse("s")
    made = await engine.prepare("s", _loop(5), Mode.HYBRID, Wire.CHAT)
    assert made is not None and made.epoch is not None and made.epoch.number == 1
    assert await leases.take("s") is not None  # given back once made
