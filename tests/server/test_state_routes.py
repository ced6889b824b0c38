"""The state routes on real loopback: a hybrid session driven through the gateway (the scripted
model patches Σ with ``skill_state``), read back, collapsed on demand and reset."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from skillstate.conversation import ErrorKind
from skillstate.gateway import RunningGateway
from skillstate.server.app import build_app
from skillstate.server.context import GatewayContext
from skillstate.support import jsonio
from skillstate.testing import RecordedRequest, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.upstream.client import UpstreamClient
from skillstate.upstream.routing import Router

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        },
    }
]
#: One verbatim turn after a boundary, so that a short session has something to collapse.
COLLAPSE = '{"keep_recent_turns": 1, "passthrough_until_boundary": false}'
SIGMA_MARK = "[skillstate] Session state"


def patching(request: RecordedRequest) -> Reply:
    """The model patches Σ with a finding named after the user's step (the newest user
    message that is not the gateway's note), then answers."""
    messages = request.json["messages"]
    if messages[-1]["role"] == "tool":
        return Reply(text="noted")
    step = next(
        m["content"]
        for m in reversed(messages)
        if m["role"] == "user" and not m["content"].startswith("[skillstate]")
    )
    return Reply(calls=[ScriptedCall("skill_state", {"patch": {"findings": {step: "seen"}}})])


@dataclass
class Rig:
    upstream: ScriptedUpstream
    gateway: RunningGateway
    http: aiohttp.ClientSession
    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    async def step(self, session: str, text: str) -> None:
        """One client request of ``session``: the history so far and a new user message."""
        history = self.messages.setdefault(session, [{"role": "system", "content": "Agent."}])
        history.append({"role": "user", "content": text})
        body = {"model": "test-model", "messages": history, "tools": TOOLS}
        headers = {"x-skillstate-session": session}
        url = self.gateway.url + "/v1/chat/completions"
        async with self.http.post(url, json=body, headers=headers) as reply:
            assert reply.status == 200, await reply.text()
            answer = await reply.json()
        history.append(answer["choices"][0]["message"])

    async def call(self, method: str, path: str, **query: str) -> tuple[int, Any]:
        async with self.http.request(method, self.gateway.url + path, params=query) as reply:
            assert reply.content_type == "application/json"
            return reply.status, jsonio.loads(await reply.read())

    def last_upstream_messages(self) -> list[dict[str, Any]]:
        """What the model was sent for the newest client request (before its continuation)."""
        firsts = [r for r in self.upstream.requests if r.json["messages"][-1]["role"] != "tool"]
        messages: list[dict[str, Any]] = firsts[-1].json["messages"]
        return messages


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    environ = {"SKILLSTATE_COLLAPSE": COLLAPSE}
    async with (
        ScriptedUpstream(patching) as upstream,
        gateway_for(upstream.url, environ=environ) as gateway,
        aiohttp.ClientSession() as http,
    ):
        yield Rig(upstream, gateway, http)


def carries_sigma(messages: list[dict[str, Any]]) -> bool:
    return any(SIGMA_MARK in str(m.get("content")) for m in messages)


async def test_sessions_are_listed_most_recent_first(rig: Rig) -> None:
    assert await rig.call("GET", "/state") == (200, {"sessions": []})
    for text in ("a1", "a2"):
        await rig.step("alpha", text)
    await rig.step("beta", "b1")
    status, body = await rig.call("GET", "/state")
    assert status == 200
    assert [line["session"] for line in body["sessions"]] == ["beta", "alpha"]
    alpha = body["sessions"][1]
    assert set(alpha) == {"session", "step", "version", "state_bytes", "last_seen", "created"}
    assert alpha["step"] == 2
    assert alpha["last_seen"] >= alpha["created"]
    _, shown = await rig.call("GET", "/state", session="alpha")
    assert alpha["state_bytes"] == len(jsonio.dumps(shown["state"]))
    assert alpha["version"] == shown["version"]


async def test_a_session_reads_back_its_state_and_last_request(rig: Rig) -> None:
    for text in ("s1", "s2", "s3"):
        await rig.step("one", text)
    status, body = await rig.call("GET", "/state", session="one")
    assert status == 200
    assert body["session"] == "one" and body["step"] == 3
    assert {"s1": "seen", "s2": "seen", "s3": "seen"}.items() <= body["state"]["findings"].items()
    context = body["context"]
    assert context["mode"] == "hybrid" and context["step"] == 3
    assert context["messages"] == len(rig.messages["one"]) - 1  # the reply came after
    # Nothing collapsed yet: the client's messages and the tail note that shows Σ.
    assert context["outbound_messages"] == context["messages"] + 1
    assert [turn["where"] for turn in body["turns"]] == ["verbatim"] * len(body["turns"])
    assert context["tokens"]["verbatim"] == context["tokens"]["total"] > 0
    assert body["window"] == {
        "first_message": 0,
        "messages": context["messages"],
        "turns": len(body["turns"]),
        "tokens": context["tokens"]["total"],
    }
    assert body["epoch"] is None and body["archive"] == []
    assert body["collapse_pending"] is False


async def test_a_forced_collapse_puts_the_sigma_message_in_the_next_request(rig: Rig) -> None:
    for text in ("c1", "c2", "c3"):
        await rig.step("two", text)
    assert not carries_sigma(rig.last_upstream_messages())
    status, body = await rig.call("POST", "/state/collapse", session="two")
    assert (status, body["session"]) == (202, "two")
    assert (await rig.call("GET", "/state", session="two"))[1]["collapse_pending"] is True

    await rig.step("two", "c4")
    sent = rig.last_upstream_messages()
    assert carries_sigma(sent)
    _, shown = await rig.call("GET", "/state", session="two")
    sigma = next(m["content"] for m in sent if SIGMA_MARK in str(m.get("content")))
    assert '"c3":"seen"' in sigma  # Σ as it stood at the boundary
    epoch = shown["epoch"]
    assert epoch["number"] == 1 and 0 < epoch["head"] < epoch["cut"]
    refs = [span["ref"] for span in epoch["spans"]]
    assert refs == [entry["ref"] for entry in shown["archive"]] and len(refs) == 1
    assert refs[0] in sigma
    wheres = [turn["where"] for turn in shown["turns"]]
    assert wheres == ["head"] + ["collapsed"] * (len(wheres) - 2) + ["verbatim"]
    assert shown["window"]["first_message"] == epoch["cut"]
    assert shown["window"]["turns"] == 1
    assert shown["context"]["outbound_messages"] < shown["context"]["messages"]
    assert shown["context"]["epoch"] == 1
    assert shown["collapse_pending"] is False


async def test_reset_forgets_the_state_epoch_and_archive_index(rig: Rig) -> None:
    for text in ("r1", "r2", "r3"):
        await rig.step("three", text)
    await rig.call("POST", "/state/collapse", session="three")
    await rig.step("three", "r4")
    status, body = await rig.call("DELETE", "/state", session="three")
    assert status == 200
    assert body == {"session": "three", "reset": True, "archive_entries_forgotten": 1}
    assert (await rig.call("GET", "/state", session="three"))[0] == 404
    assert (await rig.call("GET", "/state"))[1] == {"sessions": []}

    await rig.step("three", "r5")
    assert not carries_sigma(rig.last_upstream_messages())  # the epoch is gone
    _, shown = await rig.call("GET", "/state", session="three")
    assert shown["epoch"] is None and shown["archive"] == []
    # Σ starts afresh, the conversation does not: its fifth reply is step 5.
    assert shown["step"] == shown["state"]["step"] == 5
    assert set(shown["state"]["findings"]) == {"r5"}


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/state"), ("DELETE", "/state"), ("POST", "/state/collapse")],
)
async def test_an_unknown_session_is_a_404_json_error(rig: Rig, method: str, path: str) -> None:
    status, body = await rig.call(method, path, session="never-seen")
    assert status == 404
    assert body == {
        "error": {"message": "no session 'never-seen' has a state here", "type": "not-found"}
    }
    assert (await rig.call("GET", "/state"))[1] == {"sessions": []}  # nothing was created


@pytest.mark.parametrize(
    ("method", "path", "query"),
    [
        ("GET", "/state", {"session": "has space"}),
        ("GET", "/state", {"session": ""}),
        ("DELETE", "/state", {"session": "x" * 129}),
        ("DELETE", "/state", {}),
        ("POST", "/state/collapse", {}),
        ("POST", "/state/collapse", {"session": "semi;colon"}),
    ],
)
async def test_a_missing_or_invalid_session_id_is_a_400(
    rig: Rig, method: str, path: str, query: dict[str, str]
) -> None:
    status, body = await rig.call(method, path, **query)
    assert status == 400
    assert body["error"]["type"] == ErrorKind.INVALID_REQUEST
    assert "session" in body["error"]["message"]
    assert set(body["error"]) == {"message", "type"}


async def test_a_gateway_without_an_engine_says_so() -> None:
    context = GatewayContext(router=Router([]), client=UpstreamClient())
    runner = web.AppRunner(build_app(context))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/state") as r:
            assert r.status == 503
            assert (await r.json())["error"]["type"] == ErrorKind.UPSTREAM
    finally:
        await runner.cleanup()
