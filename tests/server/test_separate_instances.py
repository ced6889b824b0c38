"""Separate gateway processes (``skillstate serve``, each on its own port) on one PostgreSQL
store and one Redis, as instances on several machines run: one hybrid session alternating
between two of them across a boundary keeps one epoch and every patch; an ``rpm`` of N admits
N over both; and an instance killed with SIGKILL loses nothing committed: killed mid-stream,
every patch committed before is in PostgreSQL (no record half written) and the session goes on
through the other instance, Σ as committed, the other serving throughout; killed while a
boundary's handover round is in flight, the session is at the new epoch, whole, never between
two.

The processes and the scripted upstream are shared by the module's tests (one event loop for
the module); a test that kills an instance has it replaced by the next that asks for two."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import secrets
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, NoReturn

import aiohttp
import pytest
import pytest_asyncio
from redis import asyncio as aioredis
from shared_sessions import (
    LANES,
    LIMITED,
    RPM,
    PatchingModel,
    carried,
    check_one_epoch,
    gateway_config,
)
from tool_loops import ROUTES, tool_loop

from skillstate.bench.harness import free_port, healthy
from skillstate.state.epoch_record import DOC_NAME, Epoch
from skillstate.storage.postgres import PostgresArchiveStore, PostgresDatabase, PostgresStateStore
from skillstate.testing import RecordedRequest, Reply, ScriptedUpstream, postgres
from skillstate.testing.redis import URL as REDIS_URL
from skillstate.upstream.shared_limits import KEY_PREFIX

pytestmark = pytest.mark.asyncio(loop_scope="module")

BOUNDARY = 3
"""The step whose request a collapse is asked for before."""


@dataclasses.dataclass
class Instance:
    """One gateway process, at ``url``, writing its log to ``log``."""

    process: asyncio.subprocess.Process
    url: str
    log: Path

    async def kill(self) -> None:
        """SIGKILL: no handler runs, nothing is flushed or closed."""
        self.process.send_signal(signal.SIGKILL)
        assert await self.process.wait() == -signal.SIGKILL


class Fleet:
    """Gateway processes started as a user starts one, each on its own port and data
    directory, all with ``config`` (one store, one Redis, one upstream)."""

    def __init__(self, up: ScriptedUpstream, config: Path, home: Path) -> None:
        self.up = up
        self.config = config
        self.home = home
        self.started: list[Instance] = []

    async def start(self) -> Instance:
        port = free_port()
        data = self.home / f"data-{len(self.started)}"
        log = self.home / f"gateway-{len(self.started)}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSTATE_")}
        env |= {"HOME": str(self.home), "SKILLSTATE_DATA_DIR": str(data)}
        with log.open("wb") as said:  # a file, not a pipe nobody reads (it would fill up)
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "skillstate", "serve", "--config", str(self.config),
                "--port", str(port), *LANES, env=env, stdout=said, stderr=said,
            )  # fmt: skip
        instance = Instance(process, f"http://127.0.0.1:{port}", log)
        self.started.append(instance)
        try:
            await healthy(instance.url, alive=lambda: process.returncode is None)
        except RuntimeError as error:
            raise AssertionError(f"{error}: {log.read_text()[-2000:]}") from None
        return instance

    async def two(self) -> tuple[Instance, Instance]:
        """Two running instances: those started, where they still run, else new ones."""
        alive = [each for each in self.started if each.process.returncode is None]
        while len(alive) < 2:
            alive.append(await self.start())
        return alive[-2], alive[-1]

    async def stop(self) -> None:
        running = [each for each in self.started if each.process.returncode is None]
        for each in running:
            each.process.send_signal(signal.SIGTERM)
        for each in running:
            try:
                await asyncio.wait_for(each.process.wait(), 15)
            except TimeoutError:
                each.process.kill()
                await each.process.wait()


def _reachable_or_skip(what: str, error: Exception) -> NoReturn:
    if os.environ.get("CI"):
        raise error
    pytest.skip(f"{what}: {error}")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fleet(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Fleet]:
    try:
        store = postgres.dsn()
    except postgres.PostgresUnavailable as error:
        _reachable_or_skip("no PostgreSQL", error)
    redis = aioredis.from_url(REDIS_URL, socket_connect_timeout=1.0)
    try:
        await redis.ping()
    except Exception as error:
        await redis.aclose()
        _reachable_or_skip(f"no Redis at {REDIS_URL}", error)
    home = tmp_path_factory.mktemp("separate-instances")
    limited = f"test-{secrets.token_hex(4)}"  # its window in Redis is this module's alone
    async with ScriptedUpstream(PatchingModel()) as up:
        config = gateway_config(
            home / "skillstate.toml", store=store, redis=REDIS_URL, upstream=up.url, limited=limited
        )
        fleet = Fleet(up, config, home)
        try:
            yield fleet
        finally:
            await fleet.stop()
            async for key in redis.scan_iter(match=KEY_PREFIX + limited + "*"):
                await redis.delete(key)
            await redis.aclose()


@pytest_asyncio.fixture(loop_scope="module")
async def database() -> AsyncIterator[PostgresDatabase]:
    """The store the instances share, read here as it is (never emptied)."""
    db = await PostgresDatabase.open(postgres.dsn(), min_size=1, max_size=2)
    try:
        yield db
    finally:
        await db.close()


def headers(session: str) -> dict[str, str]:
    return {"x-skillstate-session": session, "x-skillstate-mode": "hybrid"}


async def post(http: aiohttp.ClientSession, url: str, body: Any, session: str) -> str:
    async with http.post(url, json=body, headers=headers(session)) as reply:
        text = await reply.text()
        assert reply.status == 200, text
        return text


async def collapse(http: aiohttp.ClientSession, instance: Instance, session: str) -> None:
    """Ask ``instance`` for a boundary at the session's next request (through whichever)."""
    url = instance.url + "/state/collapse"
    async with http.post(url, params={"session": session}) as reply:
        assert reply.status == 202, await reply.text()


def outputs_to(step: int) -> list[tuple[str, str]]:
    return [(f"call_{n}", f"output of step {n} " * 40) for n in range(step + 1)]


@pytest.mark.parametrize(
    ("wire", "stream"), [("chat", False), ("responses", True), ("messages", True)]
)
async def test_two_processes_serve_one_hybrid_session_across_a_boundary(
    fleet: Fleet, database: PostgresDatabase, wire: str, stream: bool
) -> None:
    session = f"processes-{wire}-{stream}"
    one, two = await fleet.two()
    fleet.up.policy = PatchingModel()
    by_step: list[list[RecordedRequest]] = []
    async with aiohttp.ClientSession() as http:
        for step in range(7):
            if step == BOUNDARY:
                await collapse(http, one, session)  # made by the other
            seen = len(fleet.up.requests)
            body = tool_loop(wire, stream, "Note every step.", outputs_to(step))
            said = await post(http, (one, two)[step % 2].url + ROUTES[wire], body, session)
            assert "call_s" not in said
            by_step.append(fleet.up.requests[seen:])
    assert [len(sent) for sent in by_step] == [1, 1, 1, 3, 2, 2, 2]  # 3: with the handover
    check_one_epoch(by_step, BOUNDARY)
    record = await PostgresStateStore(database).load(session)
    assert set(record.state["findings"]) == {"handover"} | {f"step-{n}" for n in range(3, 7)}


async def test_rpm_is_one_limit_across_processes(fleet: Fleet) -> None:
    one, two = await fleet.two()
    fleet.up.policy = lambda _: Reply(text="ok")
    body = {"model": LIMITED, "messages": [{"role": "user", "content": "hello"}]}
    statuses = []
    async with aiohttp.ClientSession() as http:
        for n in range(RPM + 2):
            async with http.post((one, two)[n % 2].url + ROUTES["chat"], json=body) as reply:
                statuses.append(reply.status)
    assert statuses == [200] * RPM + [429] * 2


async def read_until_cut(
    http: aiohttp.ClientSession, url: str, body: Any, session: str, first: asyncio.Event
) -> bytes:
    """What the client got of a stream before it was cut (``first``: some bytes came)."""
    got = bytearray()
    try:
        async with http.post(url, json=body, headers=headers(session)) as reply:
            assert reply.status == 200
            async for chunk in reply.content.iter_any():
                got += chunk
                first.set()
    except aiohttp.ClientError:
        pass
    return bytes(got)


async def test_sigkill_mid_stream_loses_nothing_committed(
    fleet: Fleet, database: PostgresDatabase
) -> None:
    session = "killed-mid-stream"
    one, two = await fleet.two()
    model = fleet.up.policy = PatchingModel(hold_step=6)
    state = PostgresStateStore(database)
    route = ROUTES["chat"]
    async with aiohttp.ClientSession() as http:
        for step in range(6):
            if step == BOUNDARY:
                await collapse(http, two, session)
            body = tool_loop("chat", True, "Note every step.", outputs_to(step))
            await post(http, (one, two)[step % 2].url + route, body, session)
        committed = await state.load(session)
        assert set(committed.state["findings"]) == {"handover"} | {"step-3", "step-4", "step-5"}

        body = tool_loop("chat", True, "Note every step.", outputs_to(6))
        first = asyncio.Event()
        cut = asyncio.ensure_future(read_until_cut(http, one.url + route, body, session, first))
        await asyncio.wait_for(asyncio.gather(model.holding.wait(), first.wait()), 15)
        held = await state.load(session)  # the step counted, as the request began
        other = tool_loop("chat", True, "Another task.", outputs_to(1))
        await post(http, two.url + route, other, "served-beside")  # while one holds a stream
        await one.kill()
        got = await asyncio.wait_for(cut, 15)
        model.release.set()
        assert b"Working" in got and b"[DONE]" not in got  # cut mid-stream

        after = await state.load(session)
        assert after == held  # nothing written after, nothing half written
        assert after.state == committed.state  # every patch committed before, none in flight
        seen = len(fleet.up.requests)
        await post(http, two.url + route, body, session)  # the client tries its turn again
        retried = fleet.up.requests[seen]
        other = tool_loop("chat", True, "Another task.", outputs_to(2))
        await post(http, two.url + route, other, "served-beside")
    assert carried(retried)[1] == after.state  # Σ at the version the kill left
    final = await state.load(session)
    assert final.version > after.version
    assert set(final.state["findings"]) == set(after.state["findings"]) | {"step-6"}


async def test_sigkill_in_the_handover_round_leaves_the_new_epoch_whole(
    fleet: Fleet, database: PostgresDatabase
) -> None:
    session = "killed-in-handover"
    one, two = await fleet.two()
    model = fleet.up.policy = PatchingModel(hold_handover=True)
    state = PostgresStateStore(database)
    route = ROUTES["messages"]
    by_step: list[list[RecordedRequest]] = []
    async with aiohttp.ClientSession() as http:
        for step in range(BOUNDARY):
            body = tool_loop("messages", False, "Note every step.", outputs_to(step))
            await post(http, (one, two)[step % 2].url + route, body, session)
        await collapse(http, two, session)
        body = tool_loop("messages", False, "Note every step.", outputs_to(BOUNDARY))
        asked = asyncio.ensure_future(post(http, one.url + route, body, session))
        await asyncio.wait_for(model.holding.wait(), 15)
        before = await state.load(session)
        await one.kill()
        with pytest.raises(aiohttp.ClientError):
            await asked
        model.release.set()

        # The boundary was made before its handover round: the new epoch, whole, with Σ as
        # the seed left it (as when the round fails), its span in the archive.
        after = await state.load(session)
        assert after == before and "handover" not in after.state.get("findings", {})
        assert "force_collapse" not in after.meta
        doc = await state.get_doc(session, DOC_NAME)
        assert doc is not None
        epoch = Epoch.from_json(doc)
        assert epoch.number == 1 and epoch.snapshot == after.state
        archive = PostgresArchiveStore(database)
        entries = {entry.ref for entry in await archive.entries(session)}
        assert {span.ref for span in epoch.spans} <= entries
        assert all([await archive.get(span.ref) is not None for span in epoch.spans])

        one = await fleet.start()
        for step in range(BOUNDARY, 6):  # the client tries its turn again, through two
            seen = len(fleet.up.requests)
            body = tool_loop("messages", False, "Note every step.", outputs_to(step))
            await post(http, (one, two)[step % 2].url + route, body, session)
            by_step.append(fleet.up.requests[seen:])
    assert [len(sent) for sent in by_step] == [2, 2, 2]  # no second boundary, no handover
    snapshot, _ = carried(by_step[0][0])
    assert snapshot == epoch.snapshot
    assert all(f"archived as `{span.ref}`" in by_step[0][0].body.decode() for span in epoch.spans)
    check_one_epoch(by_step, 0)
    final = await state.load(session)
    assert set(final.state["findings"]) == {"step-3", "step-4", "step-5"}
