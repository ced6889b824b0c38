"""GET /cost, GET /metrics, ``skillstate stats`` and ``x-skillstate-overhead-ms`` after real
sessions through the gateway: every client wire against every upstream wire, JSON and
streams, the internal tool loop's hidden rounds counted as the upstream requests they are."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from click.testing import CliRunner
from internal_tools_clients import DRIVERS, PAIR_IDS, PAIRS, Step

from skillstate.cli.main import cli
from skillstate.economics.tokenizer import encoding
from skillstate.gateway import RunningGateway
from skillstate.testing import Reply, ScriptedCall, ScriptedError, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Policy, Script

STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])


def _script() -> list[Reply]:
    """Per client request: a hidden skill_state round, then the answer."""
    call = ScriptedCall("skill_state", {"patch": {"objective": "x"}}, id="call_state1")
    return [
        Reply(calls=[call], input_tokens=100, output_tokens=7),
        Reply(text="All done here.", input_tokens=130, output_tokens=9),
    ]


@contextlib.asynccontextmanager
async def _rig(
    upstream_wire: str, policy: Policy, **settings: Any
) -> AsyncIterator[tuple[ScriptedUpstream, RunningGateway]]:
    # skill_state from the first request, so that its hidden rounds are counted from there
    settings.setdefault("collapse", {"passthrough_until_boundary": False})
    async with (
        ScriptedUpstream(policy) as up,
        gateway_for(up.url, wire=upstream_wire, settings=settings) as gw,
    ):
        yield up, gw


async def _get(url: str, **params: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.get(url, params=params) as reply:
        text = await reply.text()
        is_json = reply.content_type == "application/json"
        return reply.status, json.loads(text) if is_json else text


def _metric(text: str, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        found = re.match(rf"{name}(?:\{{(.*)\}})? ([0-9.e+-]+)$", line)
        if found is None:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', found.group(1) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(found.group(2))
    return total


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
@STREAMS
async def test_cost_totals_are_what_the_upstream_reported(
    pair: tuple[str, str], stream: bool
) -> None:
    client, upstream = pair
    driver = DRIVERS[client]
    async with _rig(upstream, Script(_script() * 2)) as (up, gw):
        for n in range(2):
            body = driver.body("Look up k1.", [], stream=stream)
            seen = await driver.call(gw.url, body, {"x-skillstate-session": f"cost-{n % 2}"})
            assert seen.usage == (230, 16)
        status, doc = await _get(gw.url + "/cost")
        assert status == 200
        totals = doc["totals"]
        generation = [r for r in up.requests if r.wire is not None and r.method == "POST"]
        assert totals["requests"] == len(generation) == 4  # hidden rounds are requests too
        assert totals["client_requests"] == 2
        assert (totals["input_tokens"], totals["output_tokens"]) == (460, 32)
        assert totals["failed_requests"] == 0
        assert sorted(g["session"] for g in doc["by_session"]) == ["cost-0", "cost-1"]
        assert doc["by_lane"][0]["lane"] == "state"
        _, metrics = await _get(gw.url + "/metrics")
        assert _metric(metrics, "skillstate_requests_total") == 4
        assert _metric(metrics, "skillstate_tokens_total", kind="input") == 460
        assert _metric(metrics, "skillstate_tokens_total", kind="output") == 32
        assert _metric(metrics, "skillstate_overhead_seconds_count") == 2
        assert _metric(metrics, "skillstate_upstream_seconds_count") == 2
        assert _metric(metrics, "skillstate_sessions_active") == 2
        stats = await asyncio.to_thread(
            CliRunner().invoke, cli, ["stats", "--json", "--url", gw.url]
        )
        assert stats.exit_code == 0, stats.output
        assert json.loads(stats.output)["totals"] == totals


async def test_pass_through_rows_carry_the_estimate_equal_to_the_reported_input() -> None:
    """Mode off: the client's request is what went upstream, so the estimate of a
    pass-through's input is exactly what the provider reported."""
    replies = [Reply(text="ok", input_tokens=321, output_tokens=5)] * 3
    async with _rig("auto", Script(replies), mode="off") as (_, gw):
        driver = DRIVERS["openai-chat"]
        for _ in range(3):
            await driver.call(gw.url, driver.body("hi", [], stream=False), {})
        _, doc = await _get(gw.url + "/cost")
        assert doc["totals"]["input_tokens"] == 963
        assert doc["totals"]["passthrough_input_tokens"] == 963


async def test_a_failed_request_is_a_row_and_an_upstream_error() -> None:
    async with _rig(
        "auto", Script([Reply(error=ScriptedError(503, "overloaded", "overloaded_error"))])
    ) as (_, gw):
        async with aiohttp.ClientSession() as session:
            body = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}
            async with session.post(gw.url + "/v1/chat/completions", json=body) as reply:
                assert reply.status == 503
        _, doc = await _get(gw.url + "/cost")
        assert doc["totals"]["failed_requests"] == 1
        assert doc["totals"]["input_tokens"] == 0 and doc["totals"]["cost_usd"] == 0
        _, metrics = await _get(gw.url + "/metrics")
        assert _metric(metrics, "skillstate_upstream_errors_total", kind="unavailable") == 1


async def test_every_attempt_is_in_the_ledger() -> None:
    error = ScriptedError(503, "overloaded", "overloaded_error")
    replies = [Reply(error=error), Reply(error=error), Reply(text="ok", input_tokens=5)]
    async with _rig("auto", Script(replies), retries=2, retry_max_wait=0.01) as (_, gw):
        driver = DRIVERS["openai-chat"]
        await driver.call(gw.url, driver.body("hi", [], stream=False), {})
        recorder = gw.context.recorder
        assert recorder is not None
        await recorder.flush()
        rows = await recorder.ledger.query("SELECT round, status, attempts FROM ledger")
        assert rows == [(0, 200, "503,503,200")]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ({"since": "yesterday"}, "'yesterday' is not an ISO 8601"),
        ({"since": "2026-12-02", "until": "2026-12-01"}, "until must be later than since"),
        ({"sesion": "x"}, "unknown filter 'sesion'"),
    ],
)
async def test_a_bad_filter_is_a_400_that_says_why(query: dict[str, str], words: str) -> None:
    async with _rig("auto", Script([])) as (_, gw):
        status, doc = await _get(gw.url + "/cost", **query)
        assert status == 400
        assert words in doc["error"]["message"]


async def test_filters_reach_the_ledger() -> None:
    replies = [Reply(text="ok", input_tokens=10, output_tokens=1)] * 2
    async with _rig("auto", Script(replies), mode="off") as (_, gw):
        driver = DRIVERS["openai-chat"]
        for n in range(2):
            body = driver.body("hi", [], stream=False)
            await driver.call(gw.url, body, {"x-skillstate-session": f"f{n}"})
        _, doc = await _get(gw.url + "/cost", session="f1")
        assert doc["totals"]["requests"] == 1
        _, doc = await _get(gw.url + "/cost", model="no-such-model")
        assert doc["totals"]["requests"] == 0
        _, doc = await _get(gw.url + "/cost", since="2999-01-01")
        assert doc["totals"]["requests"] == 0


# --- x-skillstate-overhead-ms ---------------------------------------------------------------


def _overhead(headers: Any) -> float:
    value = headers.get("x-skillstate-overhead-ms")
    assert value is not None, "no x-skillstate-overhead-ms"
    return float(value)


@pytest.mark.parametrize("mode", ["off", "hybrid"])
@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
@STREAMS
async def test_every_reply_says_the_gateways_own_time(
    pair: tuple[str, str], stream: bool, mode: str
) -> None:
    """The upstream takes 0.3 s before it answers: the overhead header leaves that out."""
    encoding()  # loaded at start-up by `skillstate serve`, but not by gateway_for
    client, upstream = pair
    driver = DRIVERS[client]
    slow = [Reply(text="ok", delay=0.3)]
    async with _rig(upstream, Script(slow), mode=mode) as (_, gw), aiohttp.ClientSession() as s:
        body = driver.body("hi", [], stream=stream)
        async with s.post(gw.url + driver.path, json=body) as reply:
            await reply.read()
            assert reply.status == 200
            assert 0 <= _overhead(reply.headers) < 250


async def test_errors_and_other_routes_say_it_too() -> None:
    async with (
        _rig("auto", Script([Reply(error=ScriptedError(502, "bad", "api_error"))])) as (_, gw),
        aiohttp.ClientSession() as s,
    ):
        chat = gw.url + "/v1/chat/completions"
        for method, url, data in (
            ("POST", chat, b"{not json"),
            ("POST", chat, json.dumps({"model": "test-model", "messages": []}).encode()),
            ("GET", gw.url + "/health", None),
            ("GET", gw.url + "/nowhere", None),
            ("GET", gw.url + "/cost", None),
        ):
            headers = {"content-type": "application/json"}
            async with s.request(method, url, data=data, headers=headers) as reply:
                await reply.read()
                assert _overhead(reply.headers) >= 0, (method, url, reply.status)


async def test_rows_are_priced_with_the_catalog_and_the_configs_additions() -> None:
    """``test-model`` is no catalog model: unpriced (null, never $0) until the config adds it."""
    replies = [Reply(text="ok", input_tokens=1_000_000, output_tokens=500_000)]
    driver = DRIVERS["openai-chat"]
    async with _rig("auto", Script(replies), mode="off") as (_, gw):
        await driver.call(gw.url, driver.body("hi", [], stream=False), {})
        _, doc = await _get(gw.url + "/cost")
        assert doc["totals"]["cost_usd"] is None and doc["totals"]["unpriced_requests"] == 1
    added = {"test-model": {"input": 2.0, "cached_input": 0.5, "output": 8.0}}
    async with _rig("auto", Script(replies), mode="off", prices=added) as (_, gw):
        await driver.call(gw.url, driver.body("hi", [], stream=False), {})
        _, doc = await _get(gw.url + "/cost")
        assert doc["totals"]["cost_usd"] == pytest.approx(2.0 + 4.0)
        assert doc["totals"]["passthrough_cost_usd"] == pytest.approx(6.0)
        assert doc["totals"]["saved_usd"] == pytest.approx(0.0)
        _, metrics = await _get(gw.url + "/metrics")
        assert _metric(metrics, "skillstate_cost_usd_total", kind="actual") == pytest.approx(6.0)


async def test_a_chat_stream_that_did_not_ask_for_usage_is_still_accounted() -> None:
    """The upstream is asked for the usage; the client is not sent what it did not ask for.
    (Not in mode off, which sends the client's bytes: ``test_off_bytes``.)"""
    replies = [Reply(text="hello back", input_tokens=42, output_tokens=3)]
    rig = _rig("auto", Script(replies), mode="hybrid")
    async with rig as (up, gw), aiohttp.ClientSession() as s:
        body = {
            "model": "test-model",
            "stream": True,
            "messages": [{"role": "user", "content": "hello"}],
        }
        async with s.post(gw.url + "/v1/chat/completions", json=body) as reply:
            raw = await reply.read()
        assert b"hello" in raw and b"data: [DONE]" in raw
        assert b'"usage"' not in raw
        assert up.requests[0].json["stream_options"] == {"include_usage": True}
        _, doc = await _get(gw.url + "/cost")
        assert (doc["totals"]["input_tokens"], doc["totals"]["output_tokens"]) == (42, 3)


async def test_a_collapse_is_counted() -> None:
    """``POST /state/collapse`` forces an epoch boundary on the session's next request."""
    replies = [Reply(text="ok", input_tokens=10, output_tokens=1)] * 6
    driver = DRIVERS["openai-chat"]
    async with _rig("auto", Script(replies)) as (_, gw), aiohttp.ClientSession() as s:
        headers = {"x-skillstate-session": "collapsing"}
        steps = [Step(f"call_{i}", f"k{i}", f"value {i} " * 50) for i in range(16)]
        await driver.call(gw.url, driver.body("Look up k1.", steps[:12], stream=False), headers)
        async with s.post(gw.url + "/state/collapse", params={"session": "collapsing"}) as r:
            assert r.status == 202, await r.text()
        await driver.call(gw.url, driver.body("Look up k1.", steps, stream=False), headers)
        _, metrics = await _get(gw.url + "/metrics")
        assert _metric(metrics, "skillstate_state_collapses_total") == 1


@STREAMS
async def test_a_round_spent_on_the_state_is_counted_as_state_overhead(stream: bool) -> None:
    driver = DRIVERS["openai-chat"]
    async with _rig("auto", Script(_script())) as (_, gw):
        await driver.call(gw.url, driver.body("Look up k1.", [], stream=stream), {})
        _, doc = await _get(gw.url + "/cost")
        totals = doc["totals"]
        assert totals["requests"] == 2
        assert totals["state_overhead_requests"] == 1  # the round after skill_state
        assert totals["state_overhead_input_tokens"] == 130
        recorder = gw.context.recorder
        assert recorder is not None
        rows = await recorder.ledger.query("SELECT round, cause FROM ledger ORDER BY round")
        assert rows == [(0, ""), (1, "state")]
