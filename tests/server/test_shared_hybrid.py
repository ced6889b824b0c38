"""Hybrid mode on gateways that share one PostgreSQL store (``store = "postgresql://..."``),
one session's requests going round four instances, on every wire, JSON and stream: the
boundary one instance makes is the epoch every other renders from (each request after it holds
the one before it, up to its newest message, byte for byte), no patch the model makes through
any of them is lost (Σ in PostgreSQL holds them all), and turns one instance archived are
recalled through another."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from shared_sessions import PatchingModel, carried, check_one_epoch
from tool_loops import ROUTES, tool_loop

from skillstate.conversation import Json
from skillstate.gateway import RunningGateway
from skillstate.state.handover import HANDOVER_HEADING
from skillstate.storage.postgres import PostgresStateStore
from skillstate.testing import RecordedRequest, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

WIRES = pytest.mark.parametrize("wire", sorted(ROUTES))
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
EAGER = {"lanes": "compaction,state", "collapse": {"min_turns": 2, "keep_recent_turns": 2}}
"""Hybrid that may collapse after two turns, keeping the last two."""
HEADERS = {"x-skillstate-mode": "hybrid"}
BOUNDARY = 3
"""The step whose request a collapse is asked for before."""
STEPS = 8


@contextlib.asynccontextmanager
async def instances(
    up: ScriptedUpstream, store: str, count: int
) -> AsyncIterator[list[RunningGateway]]:
    """``count`` gateways on ``store``, in front of ``up``."""
    async with contextlib.AsyncExitStack() as stack:
        settings = {"store": store, **EAGER}
        yield [await stack.enter_async_context(gateway_for(up.url, settings=settings))
               for _ in range(count)]  # fmt: skip


async def post(http: aiohttp.ClientSession, url: str, body: Any, session: str) -> str:
    headers = {**HEADERS, "x-skillstate-session": session}
    async with http.post(url, json=body, headers=headers) as reply:
        text = await reply.text()
        assert reply.status == 200, text
        return text


@WIRES
@STREAMS
async def test_four_instances_keep_one_epoch_and_every_patch_across_a_boundary(
    postgres_url: str, wire: str, stream: bool
) -> None:
    session = f"hybrid-four-{wire}-{stream}"
    outputs: list[tuple[str, str]] = []
    by_step: list[list[RecordedRequest]] = []
    stored: list[Json] = []  # Σ in PostgreSQL after each step
    async with (
        ScriptedUpstream(PatchingModel()) as up,
        instances(up, postgres_url, 4) as gateways,
        aiohttp.ClientSession() as http,
    ):
        stores = gateways[0].context.stores
        assert stores is not None and stores.shared is not None
        database = PostgresStateStore(stores.shared)
        for step in range(STEPS):
            gateway = gateways[step % len(gateways)]
            if step == BOUNDARY:  # asked of one instance, made by the next
                engine = gateways[0].context.engine
                assert engine is not None
                await engine.request_collapse(session)
            outputs.append((f"call_{step}", f"output of step {step} " * 40))
            seen = len(up.requests)
            body = tool_loop(wire, stream, "Note every step.", outputs)
            said = await post(http, gateway.url + ROUTES[wire], body, session)
            assert "call_s" not in said  # the gateway's own rounds stay hidden
            by_step.append(up.requests[seen:])
            stored.append((await database.load(session)).state)
    assert [len(sent) for sent in by_step[:BOUNDARY]] == [1] * BOUNDARY  # passed through
    handover, *boundary = by_step[BOUNDARY]
    assert HANDOVER_HEADING.encode() in handover.body
    assert len(boundary) == 2  # the boundary, then the round after the model's patch
    assert all(len(sent) == 2 for sent in by_step[BOUNDARY + 1 :])
    check_one_epoch(by_step, BOUNDARY)
    # Each step's request, whichever instance sent it, carries Σ as the step before left it.
    for step in range(BOUNDARY + 1, STEPS):
        assert carried(by_step[step][0])[1] == stored[step - 1]
    assert set(stored[-1]["findings"]) == {"handover"} | {
        f"step-{n}" for n in range(BOUNDARY, STEPS)
    }


def recalling(ref: re.Pattern[str]) -> Callable[[RecordedRequest], Reply]:
    """The model: on the step whose output says ``step 5``, recalls the first span archived
    (by the ref the Σ message names), once."""

    def policy(request: RecordedRequest) -> Reply:
        text = request.body.decode()
        found = ref.search(text)
        if found is None or "call_r1" in text or "output of step 5" not in text:
            return Reply(text="Done.")
        return Reply(calls=[ScriptedCall("recall", {"ref": found[1]}, id="call_r1")])

    return policy


@WIRES
@STREAMS
async def test_an_archive_one_instance_wrote_is_recalled_through_another(
    postgres_url: str, wire: str, stream: bool
) -> None:
    """Instance one collapses the session (its turns archived in the shared store); the
    model, served by instance two, recalls them by the ref the Σ message names."""
    session = f"recall-across-{wire}-{stream}"
    outputs: list[tuple[str, str]] = []
    async with (
        ScriptedUpstream(recalling(re.compile(r"archived as `(ar_[0-9a-f]+)`"))) as up,
        instances(up, postgres_url, 2) as (one, two),
        aiohttp.ClientSession() as http,
    ):
        assert one.context.engine is not None
        for step in range(6):
            if step == 3:
                await one.context.engine.request_collapse(session)
            outputs.append((f"call_{step}", f"output of step {step} " * 40))
            gateway = two if step == 5 else one
            body = tool_loop(wire, stream, "Note every step.", outputs)
            said = await post(http, gateway.url + ROUTES[wire], body, session)
            assert "call_r1" not in said  # the gateway's own round, hidden
    recalled = [r for r in up.requests if b"call_r1" in r.body]
    assert len(recalled) == 1, "the model never recalled"
    asked = up.requests[up.requests.index(recalled[0]) - 1]
    assert b"output of step 1" not in asked.body  # collapsed by one, at step 3
    assert b"output of step 1" in recalled[0].body  # read back from the archive, through two
