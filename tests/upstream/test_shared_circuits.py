"""Each upstream's circuit shared by the gateways on one Redis (``upstream.shared_circuits``):
outcomes counted in several processes are judged together; a circuit one opens is open in all
until the same moment; a Redis out of reach leaves each judging its own, said once. Pure parts
with a clock passed in, the sync against the machine's Redis (two syncs, each with its own
circuits, stand for two processes)."""

from __future__ import annotations

import logging
import secrets
from typing import Any

import pytest
from redis import asyncio as aioredis

from skillstate.upstream.circuit import NONE, Circuit, CircuitPolicy, Outcome, State
from skillstate.upstream.shared_circuits import KEY_PREFIX, CircuitSync, RedisWindow

POLICY = CircuitPolicy(failure_rate=0.5, min_calls=10, window_s=30.0, open_s=30.0, trials=3)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fail(circuit: Circuit, times: int) -> None:
    for _ in range(times):
        circuit.tried(Outcome.FAILED)
        circuit.record(Outcome.FAILED)


def test_what_the_others_counted_is_judged_with_this_ones_own() -> None:
    alone, shared = Circuit(Clock(), POLICY), Circuit(Clock(), POLICY)
    shared.observe((6, 6, 6, 6))
    fail(alone, 4)
    fail(shared, 4)
    assert alone.state is State.CLOSED  # 4 calls: under the volume
    assert shared.state is State.OPEN  # 10 calls, all failed, in the gateways together
    assert alone.unsent() == (4, 4, 4, 4) and alone.unsent() == NONE  # then zeroed


def test_the_others_failures_alone_open_it_when_observed() -> None:
    circuit = Circuit(Clock(), POLICY)
    circuit.observe((20, 5, 20, 5))
    assert circuit.state is State.CLOSED and circuit.degraded  # 25% of tries failed
    circuit.observe((20, 12, 20, 12))
    assert circuit.state is State.OPEN and circuit.opened_unsent


def test_a_circuit_opened_elsewhere_opens_here_until_the_same_moment() -> None:
    clock = Clock()
    circuit = Circuit(clock, POLICY)
    circuit.observe(NONE, open_for=12.0)
    assert circuit.state is State.OPEN and round(circuit.retry_in(), 6) == 12.0
    assert not circuit.opened_unsent  # theirs: nothing to tell
    clock.now += 12.0
    assert circuit.state is State.HALF_OPEN


async def test_two_processes_judge_their_outcomes_together(redis_client: Any) -> None:
    redis = redis_client
    name = f"test-{secrets.token_hex(4)}"
    one, two = {name: Circuit(Clock(), POLICY)}, {name: Circuit(Clock(), POLICY)}
    window = RedisWindow(redis)
    syncs = CircuitSync(window, one, POLICY), CircuitSync(window, two, POLICY)
    fail(one[name], 3)
    fail(two[name], 3)
    for sync in (*syncs, *syncs):
        await sync.sync()
    assert one[name].counts() == two[name].counts() == (6, 6)  # each its own once
    fail(two[name], 4)
    assert two[name].state is State.OPEN  # 10 failed calls between them
    assert one[name].state is State.CLOSED
    await syncs[1].sync()  # two says it opened
    await syncs[0].sync()
    assert one[name].state is State.OPEN
    assert 29.0 < one[name].retry_in() <= 30.0
    window = [key async for key in redis.scan_iter(match=f"{KEY_PREFIX}{name}:*")]
    assert window == [f"{KEY_PREFIX}{name}:open".encode()]  # the counts start afresh


async def test_a_redis_out_of_reach_leaves_each_its_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    client = aioredis.from_url("redis://:hunter2@127.0.0.1:9/0", socket_connect_timeout=0.5)
    circuit = Circuit(Clock(), POLICY)
    circuit.observe((5, 5, 5, 5))
    sync = CircuitSync(RedisWindow(client), {"test-down": circuit}, POLICY)
    for _ in range(3):
        await sync.sync()
    fail(circuit, 4)
    assert circuit.counts() == (4, 4) and circuit.state is State.CLOSED  # theirs forgotten
    said = [r.getMessage() for r in caplog.records if "shared window" in r.getMessage()]
    assert len(said) == 1 and "hunter2" not in said[0]
    await client.aclose()
