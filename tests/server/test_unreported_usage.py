"""An upstream that never reports its usage (defect 7 of issue 25: llama.cpp's server sends no
usage chunk) costs what the gateway counts, never 0 tokens for $0: each ledger row is counted
locally from the request and the reply and marked estimated, /cost says so, and the client is
never shown zeros it was not sent. Chat and Responses clients get no usage (a Chat client
that asked for a usage chunk gets none, as the upstream sent none; a Responses client gets
``usage: null``); an Anthropic client, whose wire requires one, gets the gateway's count. On
the client's own wire the upstream's bytes are relayed as they came. Every client wire against
its own upstream wire and another one, JSON and streams, through the official SDKs."""

from __future__ import annotations

import itertools
import json
from typing import Any

import aiohttp
import anthropic
import openai
import pytest
from internal_tools_clients import DRIVERS, PAIR_IDS, PAIRS, Driver

from skillstate.gateway import RunningGateway
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script

over_pairs = pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
over_streams = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
PRICES = {"test-model": {"input": 1.0, "output": 2.0}}
_sessions = itertools.count()


async def usage_seen(driver: Driver, url: str, body: dict[str, Any]) -> tuple[int, int] | None:
    """The usage the client's own SDK reads from the reply (None: the reply had none)."""
    headers = {"x-skillstate-session": f"unreported-{next(_sessions)}"}
    stream = bool(body.pop("stream", False))
    if driver.wire.value == "openai-chat":
        async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-test") as chat:
            if stream:
                async with chat.chat.completions.stream(**body, extra_headers=headers) as events:
                    completion = await events.get_final_completion()
            else:
                completion = await chat.chat.completions.create(**body, extra_headers=headers)
        assert completion.choices[0].message.content == "Found it."
        counts = completion.usage
        return None if counts is None else (counts.prompt_tokens, counts.completion_tokens)
    if driver.wire.value == "openai-responses":
        async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-test") as responses:
            if stream:
                async with responses.responses.stream(**body, extra_headers=headers) as events:
                    response = await events.get_final_response()
            else:
                response = await responses.responses.create(**body, extra_headers=headers)
        assert response.output_text == "Found it."
        used = response.usage
        return None if used is None else (used.input_tokens, used.output_tokens)
    async with anthropic.AsyncAnthropic(base_url=url, api_key="sk-ant-test") as messages:
        if stream:
            async with messages.messages.stream(**body, extra_headers=headers) as events:
                message = await events.get_final_message()
        else:
            message = await messages.messages.create(**body, extra_headers=headers)
    return (message.usage.input_tokens, message.usage.output_tokens)


async def ledger(gw: RunningGateway) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    async with aiohttp.ClientSession() as http:
        async with http.get(gw.url + "/cost") as reply:
            totals = (await reply.json())["totals"]
        async with http.get(gw.url + "/cost/requests") as reply:
            rows = (await reply.json())["requests"]
    return totals, rows


@over_pairs
@over_streams
async def test_an_upstream_without_usage_is_estimated_never_free(
    pair: tuple[str, str], stream: bool
) -> None:
    client, upstream = pair
    driver = DRIVERS[client]
    async with (
        ScriptedUpstream(Script([Reply(text="Found it.", usage=False)])) as up,
        gateway_for(up.url, wire=upstream, settings={"prices": PRICES}) as gw,
    ):
        body = driver.body("Look up k1.", [], stream=stream)
        if client == upstream:  # relayed as the upstream sent it (no usage, an SDK may balk)
            headers = {"x-skillstate-session": f"unreported-{next(_sessions)}"}
            assert await driver.raw(gw.url, body, headers) == up.answers[0]
        else:
            seen = await usage_seen(driver, gw.url, body)
        totals, rows = await ledger(gw)
    (row,) = rows
    assert row["estimated"] is True
    assert row["input"] > 0 and row["output"] > 0
    assert row["cost_usd"] == pytest.approx((row["input"] + 2 * row["output"]) / 1e6)
    assert totals["estimated_requests"] == 1 and totals["unpriced_requests"] == 0
    assert totals["cost_usd"] == totals["estimated_cost_usd"] > 0
    if client == upstream:
        return
    if client == "anthropic-messages":  # the wire requires one: the gateway's count
        assert seen is not None and seen[0] > 0 and seen[1] > 0
        assert (row["input"], row["output"]) == seen
    else:
        assert seen is None  # never zeros it was not sent


async def test_a_model_without_a_price_and_without_usage_is_unpriced_not_free() -> None:
    """What the llama.cpp run showed as $0.00: now unpriced, and estimated."""
    driver = DRIVERS["openai-chat"]
    async with (
        ScriptedUpstream(Script([Reply(text="Found it.", usage=False)])) as up,
        gateway_for(up.url) as gw,
    ):
        await usage_seen(driver, gw.url, driver.body("Look up k1.", [], stream=True))
        totals, (row,) = await ledger(gw)
    assert row["estimated"] is True and row["cost_usd"] is None and row["input"] > 0
    assert (totals["estimated_requests"], totals["unpriced_requests"]) == (1, 1)
    assert totals["cost_usd"] is None


@pytest.mark.parametrize("upstream", ["openai-chat", "openai-responses"])
@pytest.mark.parametrize("mode", ["off", "hybrid"])
async def test_an_anthropic_stream_opens_with_the_gateways_count_not_zeros(
    upstream: str, mode: str
) -> None:
    """The Anthropic wire requires a usage in ``message_start``, before any count is known:
    where the upstream's opening had none, the gateway's own count of the prompt (what its
    ledger counts), never the zeros the upstream did not send."""
    driver = DRIVERS["anthropic-messages"]
    async with (
        ScriptedUpstream(Script([Reply(text="Found it.", usage=False)])) as up,
        gateway_for(up.url, wire=upstream) as gw,
    ):
        body = driver.body("Look up k1.", [], stream=True)
        headers = {"x-skillstate-session": f"start-{next(_sessions)}", "x-skillstate-mode": mode,
                   "anthropic-version": "2023-06-01"}  # fmt: skip
        async with (
            aiohttp.ClientSession() as http,
            http.post(gw.url + "/v1/messages", json=body, headers=headers) as reply,
        ):
            raw = (await reply.read()).decode()
        _, rows = await ledger(gw)
    start = next(line for line in raw.splitlines() if '"message_start"' in line)
    usage = json.loads(start.removeprefix("data:").strip())["message"]["usage"]
    assert usage["input_tokens"] > 0, usage
    assert len(rows) == 1, rows
    assert rows[0]["estimated"] is True, (rows, raw)
