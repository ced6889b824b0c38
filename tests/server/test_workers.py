"""``skillstate serve --workers 2``, as a user runs it: two processes on one port share the
SQLite store, so a paper-mode session whose every request comes on a new connection (to
either worker) keeps every patch; a worker killed is started again while the other serves;
SIGTERM stops them all. Four workers on PostgreSQL and Redis keep a hybrid session's epoch
across a boundary, and one rate limit."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
from shared_sessions import LANES, LIMITED, RPM, PatchingModel, check_one_epoch, gateway_config
from tool_loops import tool_loop

from skillstate.storage.postgres import PostgresDatabase, PostgresStateStore
from skillstate.testing import RecordedRequest, Reply, ScriptedUpstream

LISTENING = re.compile(r"(\d+) workers on (http://[\d.]+:\d+)")
STEP = re.compile(r"step (\d+) of the task")


def noting(request: RecordedRequest) -> Reply:
    """Paper mode's model: notes the step the newest instruction names."""
    steps = [int(n) for n in STEP.findall(request.body.decode())]
    step = max(steps, default=-1)
    patch = {"findings": {f"step-{step}": "seen"}}
    return Reply(text=json.dumps({"state_patch": patch, "action": f"noted {step}"}))


def _free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def children(pid: int) -> list[int]:
    found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(each) for each in found]


def listeners(url: str) -> int:
    """The sockets listening on ``url``'s port: one a worker, once it serves (a worker counted
    among the children may still be starting)."""
    port = f"{int(url.rsplit(':', 1)[1]):04X}"
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return sum(
        1 for line in lines if line.split()[1].endswith(":" + port) and line.split()[3] == "0A"
    )


async def _url(process: asyncio.subprocess.Process) -> str:
    assert process.stderr is not None
    deadline = time.monotonic() + 30
    said = b""
    while time.monotonic() < deadline:
        line = await asyncio.wait_for(process.stderr.readline(), 30)
        if not line:
            break
        said += line
        if found := LISTENING.search(line.decode()):
            return found.group(2)
    raise AssertionError(f"the workers never said where they listen: {said.decode()}")


async def _answering(url: str, seconds: float = 30.0) -> None:
    """Until the workers answer at ``url`` (they start after the supervisor says where)."""
    deadline = time.monotonic() + seconds
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            try:
                async with http.get(url + "/", timeout=aiohttp.ClientTimeout(total=2)) as reply:
                    if reply.status == 200:
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            await asyncio.sleep(0.2)
    raise AssertionError(f"nothing answered at {url}")


LIMITED_BODY = {"model": LIMITED, "messages": [{"role": "user", "content": "hello"}]}
"""A request the rate-limited upstream serves."""


def _new_connections() -> aiohttp.ClientSession:
    """A client that opens a new connection for each request: any worker may take it."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True))


@contextlib.asynccontextmanager
async def _serving(tmp_path: Path, config: Path, workers: int, *flags: str) -> AsyncIterator[str]:
    """``skillstate serve --workers N`` with ``config``, until every worker listens: its URL;
    stopped with SIGTERM after, which must end it with 0."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "skillstate", "serve", "--workers", str(workers),
        "--port", _free_port(), "--config", str(config), *flags,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(tmp_path), "SKILLSTATE_DATA_DIR": str(tmp_path)},
    )  # fmt: skip
    try:
        url = await _url(process)
        await _until(lambda: listeners(url) == workers, 30)  # every request may go to any
        await _answering(url)
        yield url
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def _dead(pid: int) -> bool:
    """Whether ``pid`` has exited (gone, or a zombie its parent has not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def _until(check: object, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.1)
    raise AssertionError("not in time")


async def test_two_workers_share_one_port_and_one_store(tmp_path: Path) -> None:
    async with ScriptedUpstream(noting) as up:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "skillstate", "serve", "--workers", "2", "--port", _free_port(),
            "--upstream", up.url, "--data-dir", str(tmp_path / "data"), "--mode", "paper",
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "HOME": str(tmp_path)},
        )  # fmt: skip
        try:
            url = await _url(process)
            await _until(lambda: len(children(process.pid)) == 2)
            await _until(lambda: listeners(url) == 2, 30)  # the other serves when one is killed
            await _answering(url)
            headers = {"x-skillstate-session": "spread", "connection": "close"}
            for step in range(12):
                body = {
                    "model": "m",
                    "messages": [{"role": "user", "content": f"Do step {step} of the task."}],
                }
                async with (
                    aiohttp.ClientSession() as http,  # a new connection: either worker
                    http.post(url + "/v1/chat/completions", json=body, headers=headers) as r,
                ):
                    assert r.status == 200, await r.text()
            last = up.requests[-1].body.decode()
            assert all(f"step-{n}" in last for n in range(11)), "a patch was lost"

            first, second = children(process.pid)
            os.kill(first, signal.SIGKILL)
            await _until(lambda: _dead(first))  # its socket closed: no connection goes there
            async with (
                aiohttp.ClientSession() as http,
                http.get(url + "/", headers={"connection": "close"}) as reply,
            ):
                assert reply.status == 200  # the other serves
            await _until(
                lambda: first not in children(process.pid) and len(children(process.pid)) == 2
            )
            assert second in children(process.pid)
            async with aiohttp.ClientSession() as http, http.get(url + "/health") as reply:
                assert reply.status == 200

            process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(process.wait(), 30) == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


async def test_workers_stop_when_their_supervisor_is_killed(tmp_path: Path) -> None:
    async with ScriptedUpstream(noting) as up:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "skillstate", "serve", "--workers", "2", "--port", _free_port(),
            "--upstream", up.url, "--data-dir", str(tmp_path / "data"),
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "HOME": str(tmp_path)},
        )  # fmt: skip
        url = await _url(process)
        await _until(lambda: len(children(process.pid)) == 2)
        await _answering(url)
        workers = children(process.pid)
        process.kill()
        await process.wait()
        await _until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in workers), 20)


async def test_four_workers_on_postgresql_and_redis_keep_one_epoch_and_one_limit(
    tmp_path: Path, postgres_url: str, redis_url: str
) -> None:
    """``--workers 4`` on one PostgreSQL store and one Redis, every request on a new
    connection (to any worker): a hybrid session across a boundary keeps one epoch and every
    patch; ``rpm = 3`` admits 3 over all four."""
    session = "workers-hybrid"
    hybrid = {"x-skillstate-session": session, "x-skillstate-mode": "hybrid"}
    by_step: list[list[RecordedRequest]] = []
    statuses = []
    async with ScriptedUpstream(PatchingModel()) as up:
        config = gateway_config(
            tmp_path / "skillstate.toml",
            store=postgres_url,
            redis=redis_url,
            upstream=up.url,
            limited=f"test-{secrets.token_hex(4)}",
        )
        async with _serving(tmp_path, config, 4, *LANES) as url, _new_connections() as http:
            for step in range(7):
                if step == 3:
                    collapsing = url + "/state/collapse"
                    async with http.post(collapsing, params={"session": session}) as r:
                        assert r.status == 202
                seen = len(up.requests)
                outputs = [(f"call_{n}", f"output of step {n} " * 40) for n in range(step + 1)]
                body = tool_loop("responses", True, "Note every step.", outputs)
                async with http.post(url + "/v1/responses", json=body, headers=hybrid) as r:
                    assert r.status == 200, await r.text()
                    await r.read()
                by_step.append(up.requests[seen:])
            for _ in range(RPM + 2):
                async with http.post(url + "/v1/chat/completions", json=LIMITED_BODY) as r:
                    statuses.append(r.status)
    assert [len(sent) for sent in by_step] == [1, 1, 1, 3, 2, 2, 2]  # 3: with the handover
    check_one_epoch(by_step, 3)
    db = await PostgresDatabase.open(postgres_url, max_size=1)
    try:
        record = await PostgresStateStore(db).load(session)
    finally:
        await db.close()
    assert set(record.state["findings"]) == {"handover"} | {f"step-{n}" for n in range(3, 7)}
    assert statuses == [200] * RPM + [429] * 2


async def test_workers_without_redis_share_one_limit_through_sqlite(tmp_path: Path) -> None:
    """``--workers 2`` on the SQLite store and no Redis, every request on a new connection:
    ``rpm = 3`` admits 3 over both, where each alone would admit 3."""
    statuses = []
    async with ScriptedUpstream(PatchingModel()) as up:
        config = gateway_config(
            tmp_path / "skillstate.toml", store="", redis="", upstream=up.url, limited="limited"
        )
        async with _serving(tmp_path, config, 2) as url, _new_connections() as http:
            for _ in range(2 * RPM):
                async with http.post(url + "/v1/chat/completions", json=LIMITED_BODY) as r:
                    statuses.append(r.status)
    assert statuses == [200] * RPM + [429] * RPM
