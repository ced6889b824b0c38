"""Who is calling (issue 27): each request's login, told from its credential, on every reply
(``x-skillstate-login``) and every ledger row (``login``), on each wire, JSON and stream; and
what the gateway does with it. An Anthropic subscription login (Claude Code's Pro/Max) reaches
the upstream byte for byte in every mode, first round and later, with its own token even where
the gateway holds a key, unless ``subscription_rewrite`` asks for it to be rewritten as an API
key's request is. Its rows are subscription use: tokens counted, no per-token price."""

from __future__ import annotations

import json
import logging
from typing import Any

import aiohttp
import pytest

from skillstate.gateway import RunningGateway
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script

ROUTES = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic-messages": "/v1/messages",
}
OAUTH = "sk-ant-oat01-" + "f" * 86 + "AA"
"""An Anthropic subscription access token of the test's own making (the form Claude Code's
login has)."""
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl"
"""A ChatGPT login's access token of the test's own making (three base64url parts)."""
GATEWAY_KEY = "sk-gateway-own-key-0123456789"
STATE_EARLY = {"passthrough_until_boundary": False}


def chatgpt_here(url: str, **settings: Any) -> dict[str, Any]:
    """Settings that send a ChatGPT login's Responses requests (which go to the ChatGPT
    backend, ``chatgpt_base_url``) to the scripted upstream at ``url`` too."""
    return {"chatgpt_base_url": url + "/v1", **settings}


"""``[collapse]``: the state lane engages from a session's first request, so that any request
it may touch is touched at once."""


def credentials(login: str, wire: str) -> dict[str, str]:
    """The headers a client with ``login`` sends on ``wire`` (no credential for ``none`` and
    ``gateway-key``: the gateway's key serves those)."""
    if login == "api-key":
        if wire == "anthropic-messages":
            return {"x-api-key": "sk-ant-api03-clients-own-key"}
        return {"authorization": "Bearer sk-clients-own-key-0123"}
    if login == "anthropic-subscription":
        return {"authorization": f"Bearer {OAUTH}"}
    if login == "chatgpt":
        return {"authorization": f"Bearer {JWT}", "chatgpt-account-id": "acct-123"}
    return {}


def body_for(wire: str, stream: bool, model: str = "test-model") -> dict[str, Any]:
    task = "Look up k1."
    body: dict[str, Any]
    if wire == "openai-chat":
        body = {"model": model, "messages": [{"role": "user", "content": task}]}
        if stream:
            body["stream_options"] = {"include_usage": True}
    elif wire == "openai-responses":
        body = {"model": model, "input": task}
    else:
        body = {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": task}]}
    if stream:
        body["stream"] = True
    return body


async def post(
    gw: RunningGateway, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    sent = {"content-type": "application/json", "anthropic-version": "2023-06-01", **headers}
    async with (
        aiohttp.ClientSession() as http,
        http.post(gw.url + path, data=body, headers=sent) as reply,
    ):
        return reply.status, dict(reply.headers), await reply.read()


async def ledger_rows(gw: RunningGateway) -> list[dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.get(gw.url + "/cost/requests") as reply:
        rows: list[dict[str, Any]] = (await reply.json())["requests"]
    return rows


async def cost(gw: RunningGateway) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(gw.url + "/cost") as reply:
        doc: dict[str, Any] = await reply.json()
    return doc


LOGINS = ["none", "api-key", "anthropic-subscription", "chatgpt"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_every_login_is_named_on_the_reply_and_in_the_ledger(wire: str, stream: bool) -> None:
    """Without a key of the gateway's: no credential, a client's key, an Anthropic
    subscription, a ChatGPT login; then, with the gateway's key, a client without one."""
    raw = json.dumps(body_for(wire, stream)).encode()
    async with (
        ScriptedUpstream(Script([Reply(text="Found: k1 is v1.")] * 5)) as up,
        gateway_for(up.url, settings=chatgpt_here(up.url)) as gw,
    ):
        for login in LOGINS:
            status, headers, _ = await post(gw, ROUTES[wire], raw, credentials(login, wire))
            assert (status, headers["x-skillstate-login"]) == (200, login)
        rows = await ledger_rows(gw)
    assert [row["login"] for row in reversed(rows)] == LOGINS
    async with (
        ScriptedUpstream(Script([Reply(text="Found: k1 is v1.")] * 2)) as up,
        gateway_for(up.url, settings={"api_key": GATEWAY_KEY}) as gw,
    ):
        status, headers, _ = await post(gw, ROUTES[wire], raw, {})
        assert (status, headers["x-skillstate-login"]) == (200, "gateway-key")
        [row] = await ledger_rows(gw)
    assert row["login"] == "gateway-key"


async def test_a_refused_request_still_names_its_login() -> None:
    async with ScriptedUpstream(Script([])) as up, gateway_for(up.url) as gw:
        status, headers, _ = await post(
            gw, "/v1/messages", b"{not json", credentials("anthropic-subscription", "")
        )
    assert (status, headers["x-skillstate-login"]) == (400, "anthropic-subscription")


@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_a_login_keeps_its_own_token_where_the_gateway_holds_a_key(wire: str) -> None:
    """The gateway's key stands in for a client's API key, never for a login: a subscription
    or a ChatGPT token goes up as it came."""
    raw = json.dumps(body_for(wire, False)).encode()
    async with (
        ScriptedUpstream(Script([Reply(text="ok")] * 3)) as up,
        gateway_for(up.url, settings=chatgpt_here(up.url, api_key=GATEWAY_KEY)) as gw,
    ):
        said = []
        for login in ("api-key", "anthropic-subscription", "chatgpt"):
            _, headers, _ = await post(gw, ROUTES[wire], raw, credentials(login, wire))
            said.append(headers["x-skillstate-login"])
    heard = [r.headers.get("authorization") or r.headers.get("x-api-key") for r in up.requests]
    assert said == ["gateway-key", "anthropic-subscription", "chatgpt"]
    assert heard[0] in (GATEWAY_KEY, f"Bearer {GATEWAY_KEY}")
    assert heard[1:] == [f"Bearer {OAUTH}", f"Bearer {JWT}"]
    assert up.requests[2].headers.get("chatgpt-account-id") == "acct-123"


# --- a subscription passes through untouched ----------------------------------------------

BILLING_BLOCK = "x-anthropic-billing-header: cc_version=2.1.197.7f9; cc_entrypoint=cli;"
"""What Claude Code puts in its first system block: a value computed over the request that a
rewrite would no longer match."""
CLAUDE_HEADERS = {
    "anthropic-beta": "claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14",
    "x-claude-code-session-id": "0f6d1c2e-sub-session",
    "x-app": "cli",
}


def claude_code_round(rounds: int, stream: bool) -> bytes:
    """Claude Code's request after ``rounds`` tool round trips, written as no encoder writes
    it (spaces, a key order of its own, escapes), so anything but its own bytes shows: the
    billing block first, a system prompt with a cache marker, a Bash tool, and each round's
    bulky tool output."""
    messages: list[Any] = [{"role": "user", "content": "List the files, then read the log."}]
    for n in range(rounds):
        use = {"type": "tool_use", "id": f"toolu_{n:02d}", "name": "Bash"}
        use["input"] = {"command": f"cat log{n}.txt"}
        messages.append({"role": "assistant", "content": [use]})
        output = "\n".join(f"line {i} of log {n}: all fine \u00e9" for i in range(300))
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n:02d}", "content": output}
        messages.append({"role": "user", "content": [result]})
    bash = {"type": "object", "properties": {"command": {"type": "string"}}}
    body = {
        "stream": stream,
        "model": "claude-sonnet-4-5",
        "system": [
            {"type": "text", "text": BILLING_BLOCK},
            {
                "type": "text",
                "text": "You are Claude Code.",
                "cache_control": {"type": "ephemeral"},
            },
        ],
        "tools": [{"name": "Bash", "description": "Run a command", "input_schema": bash}],
        "messages": messages,
        "max_tokens": 32000,
        "metadata": {"user_id": '{"session_id":"0f6d1c2e-sub-session"}'},
    }
    return json.dumps(body, indent=1, ensure_ascii=True).replace('": ', '" :  ').encode()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("mode", ["hybrid", "paper"])
async def test_a_subscription_reaches_the_upstream_byte_for_byte(mode: str, stream: bool) -> None:
    """Every round of a session, the first and the later ones, goes up as Claude Code sent it,
    with its token and headers, and its reply comes back; a client's API key in the same
    session shape is rewritten (the lanes would have touched the subscription's too)."""
    settings = {"mode": mode, "collapse": STATE_EARLY}
    sent = [claude_code_round(rounds, stream) for rounds in range(4)]
    headers = {**CLAUDE_HEADERS, **credentials("anthropic-subscription", "")}
    async with (
        ScriptedUpstream(Script([Reply(text="Read them.")] * 40)) as up,
        gateway_for(up.url, wire="anthropic-messages", settings=settings) as gw,
    ):
        for raw in sent:
            status, said, reply = await post(gw, "/v1/messages", raw, headers)
            assert status == 200, reply
            assert said["x-skillstate-login"] == "anthropic-subscription"
            assert "x-skillstate-mode" not in said and "x-skillstate-lanes" not in said
            assert (b"message_stop" if stream else b"Read them.") in reply
        heard = list(up.requests)
        rows = await ledger_rows(gw)
        keyed = {**CLAUDE_HEADERS, **credentials("api-key", "anthropic-messages")}
        keyed["x-claude-code-session-id"] = "another-session"
        for raw in sent:  # paper mode wants an envelope: only what went up matters here
            await post(gw, "/v1/messages", raw, keyed)
        rewritten = up.requests[len(heard) :]
    assert [request.body for request in heard] == sent
    for request in heard:
        assert request.headers["authorization"] == f"Bearer {OAUTH}"
        assert request.headers["anthropic-beta"] == CLAUDE_HEADERS["anthropic-beta"]
        assert "x-api-key" not in request.headers
    assert {(row["mode"], row["lanes"], row["login"]) for row in rows} == {
        ("off", "", "anthropic-subscription")
    }
    assert rewritten
    assert all(request.body != raw for request, raw in zip(rewritten, sent, strict=False))


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_subscription_rewrite_rewrites_it_as_an_api_key_s_request(stream: bool) -> None:
    """With ``subscription_rewrite = true`` the subscription's requests run the lanes: the
    state lane offers its tools as it does to an API key's, and the token still goes up."""
    settings = {"mode": "hybrid", "collapse": STATE_EARLY, "subscription_rewrite": True}
    headers = {**CLAUDE_HEADERS, **credentials("anthropic-subscription", "")}
    async with (
        ScriptedUpstream(Script([Reply(text="Read them.")] * 4)) as up,
        gateway_for(up.url, wire="anthropic-messages", settings=settings) as gw,
    ):
        for rounds in (0, 2):
            raw = claude_code_round(rounds, stream)
            status, said, _ = await post(gw, "/v1/messages", raw, headers)
            assert status == 200
            assert said["x-skillstate-login"] == "anthropic-subscription"
            assert said["x-skillstate-mode"] == "hybrid"
        rows = await ledger_rows(gw)
    for request in up.requests:
        names = [tool["name"] for tool in request.json["tools"]]
        assert "skill_state" in names and "recall" in names
        assert request.headers["authorization"] == f"Bearer {OAUTH}"
    assert {row["mode"] for row in rows} == {"hybrid"}


async def test_one_log_line_per_session_says_why_it_passes_untouched(
    caplog: pytest.LogCaptureFixture,
) -> None:
    headers = {**CLAUDE_HEADERS, **credentials("anthropic-subscription", "")}
    caplog.set_level(logging.INFO, logger="skillstate.proxy")
    async with (
        ScriptedUpstream(Script([Reply(text="ok")] * 3)) as up,
        gateway_for(up.url, wire="anthropic-messages") as gw,
    ):
        for session in ("sub-a", "sub-a", "sub-b"):
            said = {**headers, "x-claude-code-session-id": session}
            await post(gw, "/v1/messages", claude_code_round(1, False), said)
    lines = [r.getMessage() for r in caplog.records if "passed through untouched" in r.getMessage()]
    assert len(lines) == 2, lines
    assert "sub-a" in lines[0] and "sub-b" in lines[1]
    assert "ANTHROPIC_API_KEY" in lines[0]


# --- the ledger: subscription use ---------------------------------------------------------


async def test_subscription_rows_count_tokens_at_no_per_token_price() -> None:
    """A subscription's rows: tokens counted, cost null, counted as subscription requests
    (not unpriced), nothing saved; a ChatGPT login's and an API key's rows keep the list
    price of their model."""
    replies = [Reply(text="ok", input_tokens=1000, output_tokens=100)] * 4
    async with (
        ScriptedUpstream(Script(replies)) as up,
        gateway_for(up.url, settings=chatgpt_here(up.url, mode="hybrid")) as gw,
    ):
        messages = json.dumps(body_for("anthropic-messages", False, "claude-sonnet-4-5")).encode()
        for _ in range(2):
            await post(gw, "/v1/messages", messages, credentials("anthropic-subscription", ""))
        await post(gw, "/v1/messages", messages, credentials("api-key", "anthropic-messages"))
        responses = json.dumps(body_for("openai-responses", False, "gpt-5")).encode()
        await post(gw, "/v1/responses", responses, credentials("chatgpt", ""))
        rows = await ledger_rows(gw)
        doc = await cost(gw)
    by_login = {row["login"]: row for row in rows}
    subscription = by_login["anthropic-subscription"]
    assert (subscription["input"], subscription["output"]) == (1000, 100)
    assert subscription["cost_usd"] is None and subscription["passthrough_cost_usd"] is None
    assert subscription["estimate_basis"] == "recorded"
    assert by_login["api-key"]["cost_usd"] > 0
    assert by_login["chatgpt"]["cost_usd"] > 0
    totals = doc["totals"]
    assert totals["subscription_requests"] == 2
    assert totals["unpriced_requests"] == 0
    assert totals["input_tokens"] == 4000
    assert totals["cost_usd"] == pytest.approx(
        by_login["api-key"]["cost_usd"] + by_login["chatgpt"]["cost_usd"]
    )
    assert totals["logins"] == {"anthropic-subscription": 2, "api-key": 1, "chatgpt": 1}
    groups = {group["login"]: group for group in doc["by_login"]}
    alone = groups["anthropic-subscription"]
    assert (alone["subscription_requests"], alone["unpriced_requests"]) == (2, 0)
    assert (alone["cost_usd"], alone["saved_usd"], alone["input_tokens"]) == (0.0, 0.0, 2000)
    assert groups["chatgpt"]["subscription_requests"] == 0


def test_the_rewrite_is_off_unless_asked_for_in_the_config_or_environment(tmp_path: Any) -> None:
    from skillstate.config import load_settings

    home = {"HOME": str(tmp_path)}
    assert load_settings(environ=home).subscription_rewrite is False
    asked = {**home, "SKILLSTATE_SUBSCRIPTION_REWRITE": "yes"}
    assert load_settings(environ=asked).subscription_rewrite is True


async def test_count_tokens_names_the_login_and_keeps_a_subscription_s_token() -> None:
    body = json.dumps(
        {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}
    )
    async with (
        ScriptedUpstream(Script([])) as up,
        gateway_for(up.url, wire="anthropic-messages", settings={"api_key": GATEWAY_KEY}) as gw,
    ):
        said = credentials("anthropic-subscription", "")
        status, headers, _ = await post(gw, "/v1/messages/count_tokens", body.encode(), said)
    assert (status, headers["x-skillstate-login"]) == (200, "anthropic-subscription")
    [heard] = up.requests
    assert heard.headers["authorization"] == f"Bearer {OAUTH}"
