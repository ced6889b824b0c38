"""`skillstate` as a user starts it: a real process in front of the scripted upstream, a
request through it, and a clean stop on SIGINT."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import stat
import sys
from pathlib import Path

import aiohttp
import pytest

from skillstate.bench.harness import free_port, healthy
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.policies import Script

SCRIPT = Path(sys.executable).with_name("skillstate")


def _env(data: Path, **settings: str) -> dict[str, str]:
    """The process environment without the user's SKILLSTATE_ settings: the data directory
    ``data`` and ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSTATE_")}
    env["SKILLSTATE_DATA_DIR"] = str(data)
    env.update(settings)
    return env


async def _serve(
    upstream: str, data: Path, **settings: str
) -> tuple[asyncio.subprocess.Process, str]:
    """Bare ``skillstate --upstream UPSTREAM --port <free>`` as a user starts it, with
    ``_env(data, **settings)``: the process (stderr piped), healthy, and its URL. The caller
    stops it; if it never comes up it is killed here."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        str(SCRIPT),
        "--upstream",
        upstream,
        "--port",
        str(port),
        env=_env(data, **settings),
        stderr=asyncio.subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        await healthy(url, alive=lambda: proc.returncode is None)
    except BaseException:
        proc.kill()
        await proc.communicate()
        raise
    return proc, url


async def test_bare_skillstate_serves_and_stops_on_sigint(tmp_path: Path) -> None:
    async with ScriptedUpstream(Script([Reply(text="hello from upstream")])) as up:
        proc, url = await _serve(up.url + "/v1", tmp_path)
        try:
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            async with (
                aiohttp.ClientSession() as session,
                session.post(url + "/v1/chat/completions", json=body) as reply,
            ):
                answer = await reply.json()
            assert answer["choices"][0]["message"]["content"] == "hello from upstream"
            assert up.requests[-1].path == "/v1/chat/completions"
        finally:
            proc.send_signal(signal.SIGINT)
            _, stderr = await asyncio.wait_for(proc.communicate(), timeout=15)
    assert proc.returncode in (0, 130), stderr.decode()
    log = stderr.decode()
    assert f"listening on {url}" in log
    assert f"upstream default: {up.url} " in log
    # One line each for the mode and the data directory, as the settings resolved them.
    assert re.search(r"skillstate: mode hybrid$", log, re.MULTILINE)
    assert re.search(rf"skillstate: data directory {re.escape(str(tmp_path))}$", log, re.MULTILINE)
    assert "sk-" not in log  # no credential ever reaches the log


@pytest.mark.parametrize("program", ["skillstate", "skillstate-proxy"])
async def test_a_port_in_use_is_one_line_naming_it_and_the_flag(
    tmp_path: Path, program: str
) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        proc = await asyncio.create_subprocess_exec(
            str(SCRIPT.with_name(program)),
            "--upstream",
            "http://127.0.0.1:9/v1",
            "--port",
            str(port),
            env=_env(tmp_path),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 1
    assert stdout == b""
    [line] = stderr.decode().splitlines()
    assert f"port {port} " in line and "already in use" in line and "--port" in line


async def test_sigterm_drains_a_stream_in_flight_then_exits_0(tmp_path: Path) -> None:
    """Graceful shutdown: on SIGTERM the gateway stops accepting, lets the stream it is
    serving finish, closes its store and exits 0."""
    words = " ".join(f"w{i}" for i in range(30))
    reply = Reply(text=words, chunk_delay=0.05)  # about 1.5 s of stream
    async with ScriptedUpstream(Script([reply])) as up:
        proc, url = await _serve(up.url + "/v1", tmp_path)
        stopped = False
        try:
            body = {
                "model": "m",
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            }
            async with (
                aiohttp.ClientSession() as session,
                session.post(url + "/v1/chat/completions", json=body) as stream,
            ):
                first = await stream.content.readany()
                assert first
                proc.send_signal(signal.SIGTERM)
                stopped = True
                await asyncio.sleep(0.3)
                # No new request is taken while the old one drains.
                with pytest.raises(aiohttp.ClientError):
                    async with aiohttp.ClientSession() as other, other.get(url + "/health"):
                        pass
                rest = await stream.read()
            text = (first + rest).decode()
            assert "w29" in text and text.rstrip().endswith("data: [DONE]")
        finally:
            if not stopped:
                proc.send_signal(signal.SIGTERM)
            _, stderr = await asyncio.wait_for(proc.communicate(), timeout=20)
    assert proc.returncode == 0, stderr.decode()
    assert "draining requests in flight" in stderr.decode()


async def test_sigterm_waits_no_longer_than_the_shutdown_timeout(tmp_path: Path) -> None:
    endless = Reply(text=" ".join(["slow"] * 60), chunk_delay=0.5)  # 30 s of stream
    async with ScriptedUpstream(Script([endless])) as up:
        proc, url = await _serve(up.url + "/v1", tmp_path, SKILLSTATE_SHUTDOWN_TIMEOUT="0.5")
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        async with (
            aiohttp.ClientSession() as session,
            session.post(url + "/v1/chat/completions", json=body) as stream,
        ):
            assert await stream.content.readany()
            proc.send_signal(signal.SIGTERM)
            _, stderr = await asyncio.wait_for(proc.communicate(), timeout=15)  # < the 30 s stream
    assert proc.returncode == 0, stderr.decode()


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
async def test_a_network_address_without_a_token_is_one_line_and_no_start(
    tmp_path: Path, host: str
) -> None:
    proc = await asyncio.create_subprocess_exec(
        str(SCRIPT),
        "--upstream",
        "http://127.0.0.1:9/v1",
        "--host",
        host,
        "--port",
        str(free_port()),
        env=_env(tmp_path / "data"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 1
    assert stdout == b""
    [line] = stderr.decode().splitlines()
    assert line.startswith(f"Error: refusing to listen on {host}:")
    assert "SKILLSTATE_AUTH_TOKEN" in line
    assert not (tmp_path / "data").exists()  # nothing was opened


async def test_the_process_keeps_its_files_private(tmp_path: Path) -> None:
    """A data directory and database left open (0777, 0666) are tightened at start, and the
    process creates everything else owner-only (umask 077)."""
    data = tmp_path / "data"
    data.mkdir()
    os.chmod(data, 0o777)
    for name in ("skillstate.db", "skillstate.db-wal", "skillstate.db-shm"):
        (data / name).touch()
        os.chmod(data / name, 0o666)
    proc, _ = await _serve("http://127.0.0.1:9/v1", data)
    try:
        status, modes = _private_view(proc.pid, data)
    finally:
        proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.communicate(), timeout=15)
    assert re.search(r"^Umask:\s+0077$", status, re.MULTILINE), status
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert {name: mode for name, mode in modes.items() if name.startswith("skillstate.db")} == {
        "skillstate.db": 0o600,
        "skillstate.db-wal": 0o600,
        "skillstate.db-shm": 0o600,
    }


def _private_view(pid: int, data: Path) -> tuple[str, dict[str, int]]:
    """The process's status (its umask) and the modes of the files in ``data``."""
    status = Path(f"/proc/{pid}/status").read_text()
    return status, {path.name: stat.S_IMODE(path.stat().st_mode) for path in data.iterdir()}
