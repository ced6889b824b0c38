"""``skillstate state`` against a running gateway: the gateway (with a scripted model that
patches Σ) runs on its own event loop in a thread, so the command runs as it does for a user,
on the main thread with its own ``asyncio.run``."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
from aiohttp import web
from click.testing import CliRunner, Result

from skillstate.cli.client import gateway_url
from skillstate.cli.main import cli
from skillstate.config import load_settings
from skillstate.support import jsonio
from skillstate.testing import RecordedRequest, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

T = TypeVar("T")

TOOLS = [{"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}]
SIGMA_MARK = "[skillstate] Session state"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [name for name in os.environ if name.startswith("SKILLSTATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def patching(request: RecordedRequest) -> Reply:
    messages = request.json["messages"]
    if messages[-1]["role"] == "tool":
        return Reply(text="noted")
    # The newest user message of the client's own, not the gateway's tail note.
    step = next(
        m["content"]
        for m in reversed(messages)
        if m["role"] == "user" and not m["content"].startswith("[skillstate]")
    )
    return Reply(calls=[ScriptedCall("skill_state", {"patch": {"findings": {step: "seen"}}})])


@dataclass
class Served:
    """A scripted upstream and a gateway on ``loop``, which runs in another thread."""

    loop: asyncio.AbstractEventLoop
    upstream: ScriptedUpstream
    url: str

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=30)

    def steps(self, session: str, *texts: str) -> None:
        """``session``'s client sends one request per text, each with the history so far."""
        self.run(_drive(self.url, session, texts))

    def sent_sigma(self) -> bool:
        """Whether the newest request from a client reached the model with the Σ message."""
        firsts = [r for r in self.upstream.requests if r.json["messages"][-1]["role"] != "tool"]
        return any(SIGMA_MARK in str(m.get("content")) for m in firsts[-1].json["messages"])


_histories: dict[str, list[dict[str, Any]]] = {}


async def _drive(url: str, session: str, texts: tuple[str, ...]) -> None:
    history = _histories.setdefault(session, [{"role": "system", "content": "Agent."}])
    async with aiohttp.ClientSession() as http:
        for text in texts:
            history.append({"role": "user", "content": text})
            body = {"model": "test-model", "messages": history, "tools": TOOLS}
            headers = {"x-skillstate-session": session}
            async with http.post(url + "/v1/chat/completions", json=body, headers=headers) as r:
                assert r.status == 200, await r.text()
                history.append((await r.json())["choices"][0]["message"])


@pytest.fixture
def served() -> Iterator[Served]:
    with _serving({}) as serving:
        yield serving


TOKEN = "gateway-token-0123456789"


@pytest.fixture
def guarded() -> Iterator[Served]:
    """A gateway that wants its token on every route."""
    with _serving({"SKILLSTATE_AUTH_TOKEN": TOKEN}) as serving:
        yield serving


@contextlib.contextmanager
def _serving(more: dict[str, str]) -> Iterator[Served]:
    _histories.clear()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    stack = contextlib.AsyncExitStack()

    async def start() -> Served:
        upstream = await stack.enter_async_context(ScriptedUpstream(patching))
        collapse = '{"keep_recent_turns": 1, "passthrough_until_boundary": false}'
        environ = {"SKILLSTATE_COLLAPSE": collapse, **more}
        gateway = await stack.enter_async_context(gateway_for(upstream.url, environ=environ))
        return Served(loop, upstream, gateway.url)

    try:
        yield asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=30)
    finally:
        asyncio.run_coroutine_threadsafe(stack.aclose(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()


def state(*args: str) -> Result:
    return CliRunner().invoke(cli, ["state", *args])


def free_port() -> int:
    """A loopback port nothing listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_list_shows_a_table_of_the_sessions(served: Served) -> None:
    served.steps("older", "o1")
    served.steps("newer", "n1", "n2")
    result = state("list", "--url", served.url)
    assert result.exit_code == 0, result.output
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["SESSION", "STEP", "VERSION", "STATE", "LAST", "SEEN"]
    assert [row.split()[:2] for row in rows] == [["newer", "2"], ["older", "1"]]
    listed = json.loads(state("list", "--url", served.url, "--json").stdout)["sessions"]
    newer = listed[0]
    assert rows[0].split()[2:5] == [str(newer["version"]), str(newer["state_bytes"]), "B"]
    step_ends = {[m.end() for m in re.finditer(r"\S+", row)][1] for row in [header, *rows]}
    assert len(step_ends) == 1  # numbers are right-aligned under their header


def test_list_without_sessions_says_so(served: Served) -> None:
    result = state("list", "--url", served.url)
    assert (result.exit_code, result.stdout) == (0, "no sessions\n")


def test_list_shows_when_each_session_was_last_seen_in_local_time_to_the_second(
    served: Served,
) -> None:
    served.steps("timed", "t1")
    [row] = state("list", "--url", served.url).stdout.splitlines()[1:]
    [listed] = json.loads(state("list", "--url", served.url, "--json").stdout)["sessions"]
    local = datetime.datetime.fromtimestamp(listed["last_seen"])
    assert row.endswith(local.strftime("%Y-%m-%d %H:%M:%S"))


def test_show_prints_a_tree_with_local_times_and_json_prints_the_gateways_json(
    served: Served,
) -> None:
    served.steps("seen", "s1", "s2")
    shown = state("show", "seen", "--url", served.url)
    assert shown.exit_code == 0, shown.output
    compact = state("show", "seen", "--url", served.url, "--json")
    assert compact.stdout.count("\n") == 1  # one line of JSON, as the gateway answered
    body = jsonio.loads(compact.stdout)
    assert body["step"] == 2 and set(body["state"]["findings"]) >= {"s1", "s2"}
    lines = shown.stdout.splitlines()
    assert lines[0] == "session seen"
    assert f"step 2, version {body['version']}, Σ {body['state_bytes']} B" in lines[1]
    created, seen = (
        datetime.datetime.fromtimestamp(body[key]).strftime("%Y-%m-%d %H:%M:%S")
        for key in ("created", "last_seen")
    )
    assert lines[2].endswith(f"created {created}, last seen {seen}")
    assert not re.search(r"\d{10}\.\d", shown.stdout)  # no Unix timestamps
    assert any(line.endswith("── s1: seen") for line in lines)
    context = body["context"]
    request = (
        f"── last request: hybrid mode, step 2, {context['messages']} messages in, "
        f"{context['outbound_messages']} sent upstream"
    )
    assert any(line.endswith(request) for line in lines)
    assert any("epoch: none yet" in line for line in lines)


def test_show_says_what_was_collapsed_and_what_is_verbatim(served: Served) -> None:
    served.steps("cut", "c1", "c2", "c3")
    state("collapse", "cut", "--url", served.url)
    served.steps("cut", "c4")
    body = json.loads(state("show", "cut", "--url", served.url, "--json").stdout)
    epoch = body["epoch"]
    [span] = epoch["spans"]
    text = state("show", "cut", "--url", served.url).stdout
    assert f"── epoch {epoch['number']}" in text
    assert f"collapsed: messages {span['first']} to {span['last']} as {span['ref']}" in text
    assert f"verbatim: messages from {epoch['cut']} on" in text
    assert f"verbatim window: from message {body['window']['first_message']}" in text
    collapsed = [t["index"] for t in body["turns"] if t["where"] == "collapsed"]
    assert f"collapsed: turns {collapsed[0]} to {collapsed[-1]}" in text
    assert f"── {span['ref']}: turns" in text  # the archive refs


def test_list_shows_the_step_sigma_holds(served: Served) -> None:
    served.steps("counted", "c1", "c2", "c3")
    [row] = state("list", "--url", served.url).stdout.splitlines()[1:]
    shown = json.loads(state("show", "counted", "--url", served.url, "--json").stdout)
    assert row.split()[:2] == ["counted", str(shown["state"]["step"])]
    assert shown["state"]["step"] == shown["step"] == 3  # three replies so far


def test_collapse_then_the_next_request_carries_the_sigma_message(served: Served) -> None:
    served.steps("long", "l1", "l2", "l3")
    result = state("collapse", "long", "--url", served.url)
    assert result.exit_code == 0, result.output
    assert result.stdout == "session long: collapse forced on its next request\n"
    served.steps("long", "l4")
    assert served.sent_sigma()
    shown = json.loads(state("show", "long", "--url", served.url, "--json").stdout)
    assert shown["epoch"]["number"] == 1 and len(shown["archive"]) == 1


def test_reset_forgets_the_session(served: Served) -> None:
    served.steps("gone", "g1", "g2", "g3")
    state("collapse", "gone", "--url", served.url)
    served.steps("gone", "g4")
    result = state("reset", "gone", "--url", served.url)
    assert result.exit_code == 0, result.output
    assert result.stdout == "session gone reset: Σ, its epoch and 1 archive entry forgotten\n"
    again = state("reset", "gone", "--url", served.url, "--json")
    assert again.exit_code == 1
    assert "no session 'gone' has a state here" in again.stderr
    assert state("list", "--url", served.url).stdout == "no sessions\n"


def test_an_unknown_session_is_a_clear_error(served: Served) -> None:
    result = state("show", "nobody", "--url", served.url)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "Error: no session 'nobody' has a state here\n"
    bad = state("collapse", "bad id", "--url", served.url)
    assert bad.exit_code == 1 and "session must be 1 to 128 characters" in bad.stderr


def test_the_default_url_comes_from_the_settings(served: Served) -> None:
    served.steps("found", "f1")
    port = served.url.rsplit(":", 1)[1]
    by_flag = CliRunner().invoke(cli, ["--port", port, "state", "list"])
    assert by_flag.exit_code == 0, by_flag.output
    assert by_flag.stdout.splitlines()[1].split()[0] == "found"
    by_env = CliRunner().invoke(
        cli, ["state", "show", "found", "--json"], env={"SKILLSTATE_PORT": port}
    )
    assert by_env.exit_code == 0, by_env.output
    assert json.loads(by_env.stdout)["session"] == "found"


def test_a_gateway_with_a_token_is_reached_with_the_token_from_the_settings(
    guarded: Served,
) -> None:
    refused = state("list", "--url", guarded.url)
    assert refused.exit_code == 1
    assert "SKILLSTATE_AUTH_TOKEN" in refused.stderr
    env = {"SKILLSTATE_AUTH_TOKEN": TOKEN}
    result = CliRunner().invoke(cli, ["state", "list", "--url", guarded.url], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == "no sessions\n"


@pytest.mark.parametrize("command", [["list"], ["show", "x"], ["reset", "x"], ["collapse", "x"]])
def test_no_gateway_running_says_how_to_start_one(command: list[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = state(*command, "--url", url)
    assert result.exit_code == 1
    assert result.stderr == f"Error: no gateway at {url}: start it with `skillstate`\n"


@pytest.mark.parametrize(
    ("status", "said"),
    [(200, "did not answer as a skillstate gateway does"), (502, "answered HTTP 502")],
)
def test_something_else_at_the_url_is_not_taken_for_a_gateway(
    served: Served, status: int, said: str
) -> None:
    async def plain(request: web.Request) -> web.Response:
        return web.Response(status=status, text="hello")

    async def start() -> web.AppRunner:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", plain)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        return runner

    runner = served.run(start())
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        result = state("list", "--url", url)
    finally:
        served.run(runner.cleanup())
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {url} ")
    assert said in result.stderr


def test_a_url_that_is_not_http_is_a_usage_error() -> None:
    result = state("list", "--url", "127.0.0.1:8789")
    assert result.exit_code == 2
    assert "is not an http:// URL" in result.stderr


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:8789"),
        ("0.0.0.0", "http://127.0.0.1:8789"),
        ("::", "http://[::1]:8789"),
        ("::1", "http://[::1]:8789"),
        ("gateway.local", "http://gateway.local:8789"),
    ],
)
def test_gateway_url_reaches_a_wildcard_address_on_loopback(host: str, url: str) -> None:
    assert gateway_url(load_settings(environ={}, cli={"host": host})) == url


def test_the_installed_program_runs_the_command(served: Served) -> None:
    served.steps("proc", "p1")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSTATE_")}
    program = Path(sys.executable).parent / "skillstate"
    result = subprocess.run(
        [str(program), "state", "list", "--json", "--url", served.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert [s["session"] for s in json.loads(result.stdout)["sessions"]] == ["proc"]
