"""Killing the gateway with SIGKILL mid-session loses no committed patch.

The gateway runs as a real process (``python -m skillstate serve``) on a data directory. Each
of the model's replies patches Σ through ``skill_state`` beside a call of the client's own
tool; a patch is committed once the client has the reply of its round. The process is killed
while a later round waits on the upstream, then started again on the same data directory:
Σ holds every committed patch (read from the SQLite store on disk, and through
``GET /state?session=ID``), the patch in flight is not half there, and the session goes on
from where it was when the client retries its turn.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from skillstate.conversation import Json
from skillstate.storage.stores import open_stores
from skillstate.testing import RecordedRequest, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.session_clients import ChatAgent, GatewayRefused
from skillstate.testing.session_view import read_request

SESSION = "kill-9"
COMMITTED = 6  # rounds whose reply reached the client before the kill
TOTAL = 10
TOOLS = [{"type": "function", "function": {"name": "run_step", "parameters": {"type": "object"}}}]
_STEP = re.compile(r"call_k(\d{2})_0\Z")


def expected(patches: int) -> Json:
    return {
        "step": patches,
        "findings": {f"p{n:02d}": f"patch {n}" for n in range(1, patches + 1)},
    }


class PatchingModel:
    """Patches Σ with its step (one more than the newest step result it was sent) and calls
    ``run_step``; the first request of step ``COMMITTED + 1`` is held until ``release``."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.waiting = asyncio.Event()

    def __call__(self, recorded: RecordedRequest) -> Reply:
        done = [
            int(m.group(1))
            for seen in read_request(recorded)
            for call_id, _ in seen.results
            if (m := _STEP.match(call_id))
        ]
        n = max(done, default=0) + 1
        patch = {"step": n, "findings": {f"p{n:02d}": f"patch {n}"}}
        calls = [
            ScriptedCall("skill_state", {"patch": patch}, id=f"call_k{n:02d}_state"),
            ScriptedCall("run_step", {"n": n}, id=f"call_k{n:02d}_0"),
        ]
        if n == COMMITTED + 1 and not self.waiting.is_set():
            self.waiting.set()
            return Reply(calls=calls, hold=self.release)
        return Reply(calls=calls)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _start(upstream: str, data_dir: Path) -> tuple[asyncio.subprocess.Process, str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSTATE_")}
    # skill_state from the first request: every reply patches Σ through it
    env["SKILLSTATE_COLLAPSE"] = '{"passthrough_until_boundary": false}'
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "skillstate", "serve", "--port", str(port)),
        *("--upstream", upstream + "/v1", "--data-dir", str(data_dir)),
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as http:
        for _ in range(400):
            try:
                async with http.get(url + "/health") as reply:
                    if reply.status == 200:
                        return proc, url
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.025)
    proc.kill()
    raise AssertionError("the gateway did not come up")


async def _stored_state(data_dir: Path) -> Json:
    stores = await open_stores(data_dir)
    try:
        assert stores.degraded is None
        return (await stores.state.load(SESSION)).state
    finally:
        await stores.close()


async def _described(http: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with http.get(url + "/state", params={"session": SESSION}) as reply:
        assert reply.status == 200, await reply.text()
        described: dict[str, Any] = await reply.json()
        return described


async def _turn(agent: ChatAgent) -> None:
    reply = await agent.send()
    assert [c.name for c in reply.calls] == ["run_step"]
    agent.add_results([(c.id, f"ran {c.arguments}") for c in reply.calls])


@pytest.mark.slow
async def test_sigkill_mid_session_loses_no_committed_patch(tmp_path: Path) -> None:
    model = PatchingModel()
    async with ScriptedUpstream(model) as up, aiohttp.ClientSession() as http:
        proc, url = await _start(up.url, tmp_path)
        try:
            headers = {"x-skillstate-session": SESSION}
            template = {"model": "test-model", "tools": TOOLS}
            agent = ChatAgent(http, url, template, "You run steps.", "Run ten steps.", headers)
            for _ in range(COMMITTED):
                await _turn(agent)
            in_flight = asyncio.ensure_future(agent.send())
            await asyncio.wait_for(model.waiting.wait(), timeout=10)
        finally:
            proc.kill()
            await proc.wait()
        assert proc.returncode == -signal.SIGKILL
        with pytest.raises((aiohttp.ClientError, GatewayRefused)):
            await in_flight
        model.release.set()

        assert await _stored_state(tmp_path) == expected(COMMITTED)

        proc, url = await _start(up.url, tmp_path)
        try:
            assert (await _described(http, url))["state"] == expected(COMMITTED)
            agent.endpoint.url = url + "/v1/chat/completions"
            for _ in range(COMMITTED + 1, TOTAL + 1):  # the client retries its lost turn
                await _turn(agent)
            described = await _described(http, url)
        finally:
            proc.send_signal(signal.SIGINT)
            await asyncio.wait_for(proc.wait(), timeout=15)
    assert described["state"] == expected(TOTAL)
    assert described["step"] == TOTAL + 1  # one request was lost with the killed process
    assert up.errors == []
