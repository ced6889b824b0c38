"""A virtual key's budget and rate limits through a real gateway (``server.budgets``):
concurrent streams of one key stop within one request's cost of its budget; a spent budget is
a 429 in each client wire, saying why and when it resets, with nothing sent upstream; a call
the upstream refuses holds nothing afterwards; a model without a price counts at the fallback
price, a stream without usage at the gateway's own count; ``rpm`` and ``tpm`` per key."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest
from multidict import CIMultiDict

from skillstate.conversation import Usage
from skillstate.economics.allowance import period_of
from skillstate.server.budgets import Budgets
from skillstate.storage.keys import KeyLimits, VirtualKey
from skillstate.storage.spend import Hold, Tally
from skillstate.testing import RecordedRequest, Reply, ScriptedUpstream
from skillstate.testing.gateway import RunningGateway, gateway_for
from skillstate.testing.keys import GatewayKeys

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MESSAGES = "/v1/messages"
OUT = 200
"""The output tokens each scripted reply reports (what the requests ask for at most)."""


class Budgeted:
    """A gateway, its upstream and the keys' store, lookups never cached."""

    def __init__(self, gateway: RunningGateway, up: ScriptedUpstream) -> None:
        self.gateway, self.up = gateway, up
        self.keys = GatewayKeys(gateway)
        assert gateway.context.budgets is not None
        self.budgets: Budgets = gateway.context.budgets

    async def make(self, **limits: object) -> tuple[str, VirtualKey]:
        return await self.keys.make("alice", limits=KeyLimits(**limits))  # type: ignore[arg-type]

    async def post(
        self, path: str, body: object, headers: dict[str, str]
    ) -> tuple[int, CIMultiDict[str], str]:
        async with (
            aiohttp.ClientSession() as http,
            http.post(self.gateway.url + path, json=body, headers=headers) as reply,
        ):
            return reply.status, CIMultiDict(reply.headers), await reply.text()

    async def tally(self, key: VirtualKey) -> Tally:
        await self.budgets.drain()
        now = time.time()
        period = period_of(key.limits.period, now)
        return await self.budgets.store.tally(key.id, period, now)

    async def spend(self, key: VirtualKey, amount: float) -> None:
        """What ``key`` spent this period, as if requests had cost ``amount``."""
        period = period_of(key.limits.period, time.time())
        await self.budgets.store.settle(Hold("spent", key.id, period, 0.0), amount)


def answering(**given: object) -> Callable[[RecordedRequest], Reply]:
    def answer(_: RecordedRequest) -> Reply:
        return Reply(text="ok", output_tokens=OUT, **given)  # type: ignore[arg-type]

    return answer


@pytest.fixture
async def budgeted() -> AsyncIterator[Budgeted]:
    async with ScriptedUpstream(answering()) as up, gateway_for(up.url) as gw:
        yield Budgeted(gw, up)


def chat(stream: bool = False, model: str = "gpt-4.1") -> dict[str, object]:
    return {
        "model": model,
        "max_tokens": OUT,
        "stream": stream,
        "stream_options": {"include_usage": True} if stream else None,
        "messages": [{"role": "user", "content": "Say ok."}],
    }


def bearer(text: str) -> dict[str, str]:
    return {"authorization": f"Bearer {text}"}


async def test_concurrent_streams_stop_within_one_requests_cost_of_the_budget() -> None:
    held = asyncio.Event()
    answer = answering(hold=held, chunk_delay=0.001)
    async with ScriptedUpstream(answer) as up, gateway_for(up.url) as gw:
        rig = Budgeted(gw, up)
        body = chat(stream=True)
        bound, _ = rig.budgets.pricer.bound("gpt-4.1", json.dumps(body).encode())
        budget = bound * 5.5  # room for five requests' holds, not sixteen
        text, key = await rig.make(budget_usd=budget, period="day")
        calls = [asyncio.create_task(rig.post(CHAT, body, bearer(text))) for _ in range(16)]
        deadline = time.monotonic() + 10
        while sum(c.done() for c in calls) + len(up.requests) < 16:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        held.set()
        results = await asyncio.gather(*calls)
        tally = await rig.tally(key)
    statuses = [status for status, _, _ in results]
    assert statuses.count(200) == len(up.requests) == 5
    for status, headers, said in results:
        if status == 429:
            error = json.loads(said)["error"]
            assert "budget of" in error["message"] and "resets at" in error["message"]
            assert int(headers["retry-after"]) > 0
    assert tally.held == 0
    one = rig.budgets.pricer.actual("gpt-4.1", _usage(up.requests[0].body, OUT))
    assert 0 < tally.spent <= budget + one
    assert tally.spent == pytest.approx(5 * one, rel=0.5)  # counted from the streams' usage


def _usage(body: bytes, output: int) -> Usage:
    return Usage(input=len(body) // 4, output=output)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("path", [CHAT, RESPONSES, MESSAGES])
async def test_a_spent_budget_is_a_429_in_the_clients_wire(
    budgeted: Budgeted, path: str, stream: bool
) -> None:
    text, key = await budgeted.make(budget_usd=1.0, period="month")
    await budgeted.spend(key, 1.0)
    if path == MESSAGES:
        body: dict[str, object] = {
            "model": "claude-sonnet-4-5",
            "max_tokens": OUT,
            "stream": stream,
            "messages": [{"role": "user", "content": "Say ok."}],
        }
        headers = {"x-api-key": text, "anthropic-version": "2023-06-01"}
    elif path == RESPONSES:
        body = {"model": "gpt-4.1", "input": "Say ok.", "max_output_tokens": OUT, "stream": stream}
        headers = bearer(text)
    else:
        body, headers = chat(stream), bearer(text)
    status, replied, said = await budgeted.post(path, body, headers)
    assert status == 429 and budgeted.up.requests == []  # nothing went upstream
    error = json.loads(said)
    if path == MESSAGES:
        assert error["type"] == "error" and error["error"]["type"] == "rate_limit_error"
    message = error["error"]["message"]
    assert f"key {key.id} (tenant alice): its budget of $1.00 a month is spent" in message
    assert "resets at" in message and message.endswith("-01T00:00:00Z")
    assert 0 < int(replied["retry-after"]) <= 31 * 86_400, replied


async def test_a_request_dearer_than_the_whole_budget_is_told_so(budgeted: Budgeted) -> None:
    text, _ = await budgeted.make(budget_usd=0.0001)
    body = {**chat(), "max_tokens": 100_000}
    status, headers, said = await budgeted.post(CHAT, body, bearer(text))
    assert status == 429 and "more than its whole budget" in said and "retry-after" not in headers
    assert budgeted.up.requests == []


async def test_a_failed_call_holds_nothing_and_the_budget_serves_again() -> None:
    failing = [True]

    def answer(_: RecordedRequest) -> Reply:
        return Reply.failure(500) if failing[0] else Reply(text="ok", output_tokens=OUT)

    async with ScriptedUpstream(answer) as up, gateway_for(up.url) as gw:
        rig = Budgeted(gw, up)
        bound, _ = rig.budgets.pricer.bound("gpt-4.1", json.dumps(chat(True)).encode())
        text, key = await rig.make(budget_usd=bound * 1.5)  # one hold at a time
        for stream in (False, True):
            status, _, _ = await rig.post(CHAT, chat(stream), bearer(text))
            assert status == 500
            assert await rig.tally(key) == Tally(0.0, 0.0)
        failing[0] = False
        status, _, _ = await rig.post(CHAT, chat(True), bearer(text))
        assert status == 200
        tally = await rig.tally(key)
        assert tally.held == 0 and tally.spent > 0


async def test_a_model_without_a_price_counts_at_the_fallback_price() -> None:
    answer = answering(input_tokens=50)
    settings = {"budget_fallback_input_price": 20.0, "budget_fallback_output_price": 100.0}
    async with ScriptedUpstream(answer) as up, gateway_for(up.url, settings=settings) as gw:
        rig = Budgeted(gw, up)
        text, key = await rig.make(budget_usd=5.0)
        for stream in (False, True):
            status, _, _ = await rig.post(CHAT, chat(stream, "a-model-nobody-prices"), bearer(text))
            assert status == 200
        tally = await rig.tally(key)
    assert tally.spent == pytest.approx(2 * (50 * 20.0 + OUT * 100.0) / 1e6)


async def test_a_stream_without_usage_counts_at_the_gateways_own_count() -> None:
    async with ScriptedUpstream(answering(usage=False)) as up, gateway_for(up.url) as gw:
        rig = Budgeted(gw, up)
        text, key = await rig.make(budget_usd=5.0)
        status, _, _ = await rig.post(CHAT, chat(True), bearer(text))
        assert status == 200
        tally = await rig.tally(key)
    assert tally.held == 0 and tally.spent > 0  # never 0


async def test_a_keys_requests_per_minute(budgeted: Budgeted) -> None:
    text, _ = await budgeted.make(rpm=2)
    other, _ = await budgeted.make(rpm=2)
    for _ in range(2):
        assert (await budgeted.post(CHAT, chat(), bearer(text)))[0] == 200
    status, headers, said = await budgeted.post(CHAT, chat(True), bearer(text))
    assert status == 429 and "limit of 2 requests a minute" in said
    assert int(headers["retry-after"]) > 10
    assert (await budgeted.post(CHAT, chat(), bearer(other)))[0] == 200  # a key's own window
    assert len(budgeted.up.requests) == 3


async def test_a_keys_tokens_per_minute_count_the_output_asked_for(budgeted: Budgeted) -> None:
    text, _ = await budgeted.make(tpm=OUT + 100)
    assert (await budgeted.post(CHAT, chat(), bearer(text)))[0] == 200
    status, _, said = await budgeted.post(CHAT, chat(), bearer(text))
    assert status == 429 and "tokens a minute" in said
    big = {**chat(), "max_tokens": OUT * 10}
    status, _, said = await budgeted.post(CHAT, big, bearer(text))
    assert status == 429 and "alone are over" in said
    assert len(budgeted.up.requests) == 1


async def test_a_key_without_limits_and_the_token_are_not_counted(budgeted: Budgeted) -> None:
    text, key = await budgeted.make()
    assert (await budgeted.post(CHAT, chat(True), bearer(text)))[0] == 200
    assert await budgeted.tally(key) == Tally(0.0, 0.0)


async def test_every_round_of_a_request_counts() -> None:
    """Paper mode's correction round (the first reply was no envelope) is spent too."""
    replies = iter(
        [
            Reply(text="not an envelope", input_tokens=40, output_tokens=20),
            Reply(
                text=json.dumps({"state_patch": {}, "action": "ok"}),
                input_tokens=40,
                output_tokens=20,
            ),
        ]
    )
    settings = {"mode": "paper"}
    async with (
        ScriptedUpstream(lambda _: next(replies)) as up,
        gateway_for(up.url, settings=settings) as gw,
    ):
        rig = Budgeted(gw, up)
        text, key = await rig.make(budget_usd=5.0)
        status, _, _ = await rig.post(CHAT, chat(), bearer(text))
        assert status == 200 and len(up.requests) == 2
        tally = await rig.tally(key)
    assert tally == Tally(pytest.approx(2 * (40 * 2.0 + 20 * 8.0) / 1e6), 0.0)


IMAGE = base64.b64encode(bytes(600_000)).decode()
"""A screenshot's base64: 800,000 characters, held as so many tokens it would be $1.60 on
gpt-4.1 and $4.80 on Claude Sonnet; billed as some 1,600 tokens."""


def with_image(path: str, stream: bool) -> dict[str, object]:
    asked = "What is it?"
    if path == MESSAGES:
        source = {"type": "base64", "media_type": "image/png", "data": IMAGE}
        parts: list[object] = [{"type": "text", "text": asked}, {"type": "image", "source": source}]
        return {"model": "claude-sonnet-4-5", "max_tokens": OUT, "stream": stream,
                "messages": [{"role": "user", "content": parts}]}  # fmt: skip
    url = f"data:image/png;base64,{IMAGE}"
    if path == RESPONSES:
        parts = [{"type": "input_text", "text": asked}, {"type": "input_image", "image_url": url}]
        return {"model": "gpt-4.1", "max_output_tokens": OUT, "stream": stream,
                "input": [{"role": "user", "content": parts}]}  # fmt: skip
    parts = [{"type": "text", "text": asked}, {"type": "image_url", "image_url": {"url": url}}]
    return {**chat(stream), "messages": [{"role": "user", "content": parts}]}


@pytest.mark.parametrize("mode", ["off", "hybrid"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("path", [CHAT, RESPONSES, MESSAGES])
async def test_an_image_is_held_by_its_pixels_not_its_bytes(
    path: str, stream: bool, mode: str
) -> None:
    """A key with a budget of $0.50 and 20,000 tokens a minute sends a screenshot in each
    wire: held at 16,384 tokens for the image (not its 800,000 characters), counted as 1,590
    by the rate limit, it goes up, and is settled at what the provider says it cost."""
    answer = answering(input_tokens=1_700)
    async with ScriptedUpstream(answer) as up, gateway_for(up.url) as gw:
        rig = Budgeted(gw, up)
        text, key = await rig.make(budget_usd=0.5, tpm=20_000)
        headers = {**bearer(text), "x-skillstate-mode": mode}
        if path == MESSAGES:
            headers = {"x-api-key": text, "anthropic-version": "2023-06-01"}
            headers["x-skillstate-mode"] = mode
        status, _, said = await rig.post(path, with_image(path, stream), headers)
        assert status == 200, said
        assert IMAGE.encode() in up.requests[0].body
        tally = await rig.tally(key)
    model = "claude-sonnet-4-5" if path == MESSAGES else "gpt-4.1"
    cost = rig.budgets.pricer.actual(model, Usage(input=1_700, output=OUT))
    assert tally == Tally(pytest.approx(cost), 0.0)


OBJECT = {"type": "object"}
LEAVING: dict[str, tuple[str, dict[str, object], dict[str, object]]] = {
    "openai-chat": (CHAT, {**chat(stream=True), "max_tokens": 4_000},
                    {"type": "function", "function": {"name": "f", "parameters": OBJECT}}),
    "openai-responses": (RESPONSES, {"model": "gpt-4.1", "input": "Say ok.", "stream": True,
                                     "max_output_tokens": 4_000},
                         {"type": "function", "name": "f", "parameters": OBJECT}),
    "anthropic-messages": (MESSAGES, {"model": "gpt-4.1", "max_tokens": 4_000, "stream": True,
                                      "messages": [{"role": "user", "content": "Say ok."}]},
                           {"name": "f", "input_schema": OBJECT}),
}  # fmt: skip
"""Per client wire: its path, a stream asking for much, and a tool of its shape."""
OTHER = {"openai-chat": "anthropic-messages", "openai-responses": "openai-chat"}
OTHER["anthropic-messages"] = "openai-chat"


@pytest.mark.parametrize("client", sorted(LEAVING))
@pytest.mark.parametrize("path", ["express", "relayed", "rounds"])
async def test_a_client_that_leaves_mid_stream_spends_what_came_not_the_hold(
    path: str, client: str
) -> None:
    """The client reads a little of a stream and leaves (an agent's user pressed Esc): the
    key spends what the upstream made until then, counted by the gateway, not the most the
    request might have cost (``max_tokens`` of output, the whole body as input). The paths,
    in each client wire: undecoded (express), decoded and relayed as bytes, translated
    through the rounds (to an upstream of another wire)."""

    def slow(_: RecordedRequest) -> Reply:
        return Reply(text="word " * OUT, input_tokens=30, output_tokens=OUT, chunk_delay=0.01)

    route, body, tool = LEAVING[client]
    wire = OTHER[client] if path == "rounds" else "auto"
    async with ScriptedUpstream(slow) as up, gateway_for(up.url, wire=wire) as gw:
        rig = Budgeted(gw, up)
        text, key = await rig.make(budget_usd=5.0)
        if path == "relayed":
            body = {**body, "tools": [tool]}  # the state lane reads it: decoded, though unchanged
        headers = bearer(text)
        if client == "anthropic-messages":
            headers = {"x-api-key": text, "anthropic-version": "2023-06-01"}
        async with (
            aiohttp.ClientSession() as http,
            http.post(gw.url + route, json=body, headers=headers) as reply,
        ):
            assert reply.status == 200
            await reply.content.readline()
        await asyncio.wait_for(up.disconnected.wait(), 5)
        tally = await rig.tally(key)
    whole = rig.budgets.pricer.actual("gpt-4.1", Usage(input=30, output=OUT))
    assert tally.held == 0 and 0 < tally.spent < whole, tally
