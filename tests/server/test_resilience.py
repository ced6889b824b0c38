"""Never the reason a call fails: retries before the first byte, the circuit breaker, the
timeouts, and upstream faults mapped to 502/504 in the client's wire, on every wire pair,
JSON and stream, off and hybrid. Faults come from the scripted upstream's fault mode."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from typing import Any

import aiohttp
import pytest
from internal_tools_clients import DRIVERS, calls_and_results
from rig import TOOLS_AT_ONCE, Rig, over_modes, over_pairs, over_streams
from rig import rigged as rigged_without_retries

from skillstate.economics.exchange import Exchange
from skillstate.testing import Fault, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Policy, Script


def rigged(
    pair: tuple[str, str], stream: bool, policy: Policy, **settings: Any
) -> contextlib.AbstractAsyncContextManager[Rig]:
    """The shared rig, with retries on (2, waits capped at 2 s) unless ``settings`` say else."""
    return rigged_without_retries(
        pair, stream, policy, **{"retries": 2, "retry_max_wait": 2.0, **settings}
    )


FAST = {"retry-after-ms": "20"}


# --- retries --------------------------------------------------------------------------------


@over_pairs
@over_streams
@over_modes
@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 529])
async def test_a_retryable_status_is_tried_again(
    pair: tuple[str, str], stream: bool, mode: str, status: int
) -> None:
    script = Script([Reply.failure(status, "try later", headers=FAST), Reply(text="Recovered")])
    async with rigged(pair, stream, script) as rig:
        got = await rig.post(mode)
        assert len(rig.upstream.requests) == 2
    assert got.status == 200 and "Recovered" in got.text
    assert rig.exchanges[0].attempts == [status, 200]


@over_pairs
@over_streams
async def test_a_dropped_connection_is_tried_again(pair: tuple[str, str], stream: bool) -> None:
    script = Script([Reply(fault=Fault.RESET, text="never seen"), Reply(text="Recovered")])
    async with rigged(pair, stream, script) as rig:
        got = await rig.post("off")
    if stream:  # the reset came after the stream's first event: its bytes were relayed
        assert got.status == 200 and "stream broke" in got.text
        assert len(rig.upstream.requests) == 1
    else:
        assert got.status == 200 and "Recovered" in got.text
        assert rig.exchanges[0].attempts == [0, 200]


async def test_retry_after_is_honoured() -> None:
    pair = ("openai-chat", "openai-chat")
    wait = {"retry-after": "1"}
    script = Script([Reply.failure(429, "slow down", headers=wait), Reply(text="Later")])
    async with rigged(pair, False, script) as rig:
        started = time.monotonic()
        got = await rig.post()
        waited = time.monotonic() - started
    assert got.status == 200 and waited >= 0.95


@over_pairs
async def test_a_wait_past_the_cap_goes_back_to_the_client(pair: tuple[str, str]) -> None:
    script = Script([Reply.failure(429, "come back in a minute", headers={"retry-after": "60"})])
    async with rigged(pair, False, script) as rig:
        got = await rig.post()
        assert len(rig.upstream.requests) == 1
    assert got.status == 429 and got.headers["retry-after"] == "60"


@over_pairs
async def test_what_is_not_retryable_is_not_retried(pair: tuple[str, str]) -> None:
    script = Script([Reply.failure(400, "bad field"), Reply(text="never")])
    async with rigged(pair, False, script) as rig:
        got = await rig.post()
        assert len(rig.upstream.requests) == 1
    assert got.status == 400 and "bad field" in got.text


@over_pairs
@over_modes
async def test_never_retried_once_bytes_were_sent(pair: tuple[str, str], mode: str) -> None:
    script = Script([Reply.failure(500, "broke mid-way", mid_stream=True), Reply(text="never")])
    async with rigged(pair, True, script) as rig:
        got = await rig.post(mode)
        assert len(rig.upstream.requests) == 1
    assert got.status == 200 and "broke mid-way" in got.text


@over_pairs
@over_streams
async def test_a_continuation_round_is_retried_too(pair: tuple[str, str], stream: bool) -> None:
    call = ScriptedCall("skill_state", {"patch": {"objective": "x"}}, id="call_s")
    script = Script(
        [Reply(calls=[call]), Reply.failure(503, "busy", headers=FAST), Reply(text="Done")]
    )
    async with rigged(pair, stream, script) as rig:
        got = await rig.post("hybrid")
        assert len(rig.upstream.requests) == 3
    assert got.status == 200 and "Done" in got.text
    assert rig.exchanges[0].attempts == [200, 503, 200]


# --- timeouts and faults -------------------------------------------------------------------


@over_pairs
@over_streams
@over_modes
async def test_an_upstream_that_never_answers_is_a_504(
    pair: tuple[str, str], stream: bool, mode: str
) -> None:
    script = Script([Reply(fault=Fault.HANG)])
    settings = {"retries": 0, "first_byte_timeout": 0.3}
    async with rigged(pair, stream, script, **settings) as rig:
        got = await rig.post(mode)
    assert got.status == 504
    assert "'default' did not answer in time" in got.text


@over_pairs
@over_streams
@over_modes
async def test_a_reply_slower_to_start_than_a_stream_may_stall_is_served(
    pair: tuple[str, str], stream: bool, mode: str
) -> None:
    """The first-byte limit holds until the reply starts, the idle limit only after it: a
    provider that thinks for longer than a stream may stay silent is still waited for."""
    script = Script([Reply(text="Pondered", delay=0.6)])
    settings = {"retries": 0, "first_byte_timeout": 3.0, "stream_idle_timeout": 0.2}
    async with rigged(pair, stream, script, **settings) as rig:
        got = await rig.post(mode)
    assert got.status == 200 and "Pondered" in got.text


@over_pairs
@over_modes
async def test_a_stream_that_stalls_ends_with_the_wires_error_event(
    pair: tuple[str, str], mode: str
) -> None:
    stalled = asyncio.Event()  # never set: the stream stops after its first event
    script = Script([Reply(text="Starting then stalling", hold=stalled, chunk_delay=0.01)])
    async with rigged(pair, True, script, stream_idle_timeout=0.3) as rig:
        got = await rig.post(mode)
    # Only the stream's opening came before the stall: relayed in pass-through (so the error
    # is an event), held back in hybrid until something visible (so it is a real 504).
    assert got.status == (504 if mode == "hybrid" else 200)
    assert "did not answer in time" in got.text and "HTTP/1.1" not in got.text


@over_pairs
@over_modes
async def test_junk_json_from_the_upstream_is_a_502_naming_it(
    pair: tuple[str, str], mode: str
) -> None:
    script = Script([Reply(text="cut short", fault=Fault.TRUNCATED_JSON) for _ in range(3)])
    async with rigged(pair, False, script) as rig:
        got = await rig.post(mode)
    assert got.status == 502 and "'default'" in got.text
    if mode == "off" and pair[0] == pair[1]:  # pass-through: read whole before the client's byte
        assert "cut short" in got.text
    # Read before the client had a byte: each try a 502 of the upstream's, cut short.
    assert rig.exchanges[0].attempts == [502, 502, 502]


@over_pairs
async def test_junk_json_passed_through_is_tried_again(pair: tuple[str, str]) -> None:
    """The pass-through relay reads a JSON reply whole within ``Forward``'s tries too: a body
    cut short is tried again, and the client gets the whole one."""
    script = Script([Reply(text="cut short", fault=Fault.TRUNCATED_JSON), Reply(text="Whole")])
    async with rigged(pair, False, script) as rig:
        got = await rig.post("off")
    assert got.status == 200 and "Whole" in got.text
    assert rig.exchanges[0].attempts == [502, 200]


@over_pairs
async def test_junk_json_in_the_round_loop_is_tried_again(pair: tuple[str, str]) -> None:
    """A JSON round is read whole inside ``Forward``'s tries (``Outbound.settle``): a reply
    that cannot be read is retried like a 502, since nothing of it reached the client."""
    script = Script([Reply(text="cut short", fault=Fault.TRUNCATED_JSON), Reply(text="Whole")])
    async with rigged(pair, False, script) as rig:
        got = await rig.post("hybrid")
    assert got.status == 200 and "Whole" in got.text
    assert rig.exchanges[0].attempts == [502, 200]


@over_pairs
@over_modes
async def test_a_malformed_event_mid_stream_ends_the_stream_cleanly(
    pair: tuple[str, str], mode: str
) -> None:
    script = Script([Reply(text="Malformed later", fault=Fault.MALFORMED_SSE)])
    async with rigged(pair, True, script) as rig:
        got = await rig.post(mode)
    assert got.status in (200, 502)
    assert "HTTP/1.1" not in got.text
    # Never a complete answer; pass-through relays the upstream's own bytes, broken event
    # included, then the error event: the stream never reached its terminal event.
    assert "cannot read" in got.text or "cut short" in got.text


async def test_a_huge_reply_comes_through_whole() -> None:
    pair = ("openai-chat", "anthropic-messages")
    async with rigged(pair, False, Script([Reply(fault=Fault.HUGE)])) as rig:
        got = await rig.post("off")
    assert got.status == 200 and got.text.count("x") >= 8 * 1024 * 1024


# --- fallbacks and rate limits -------------------------------------------------------------


def _config(tmp_path: Any, text: str) -> str:
    path = tmp_path / "skillstate.toml"
    path.write_text(text)
    return str(path)


def _fallback_config(tmp_path: Any, primary: str, backup: str, other: str) -> str:
    """A Chat upstream ``primary`` whose fallback is ``backup``, of wire ``other``."""
    return _config(
        tmp_path,
        f'[[upstreams]]\nname = "primary"\nbase_url = "{primary}"\n'
        f'wire = "openai-chat"\nfallbacks = ["backup"]\n'
        f'[[upstreams]]\nname = "backup"\nbase_url = "{backup}"\nwire = "{other}"\n'
        'models = ["none-*"]\n',
    )


@over_streams
@pytest.mark.parametrize("other", ["openai-chat", "anthropic-messages"])
@over_modes
async def test_a_fallback_serves_when_the_upstream_is_down(
    tmp_path: Any, stream: bool, other: str, mode: str
) -> None:
    """The primary answers 503 until its retries are spent; the fallback (of the client's wire
    or another one, translated) serves the request."""
    down = Script([Reply.failure(503, "down", headers=FAST) for _ in range(3)])
    async with (
        ScriptedUpstream(down) as primary,
        ScriptedUpstream(Script([Reply(text="Fallback here")])) as backup,
    ):
        config = _fallback_config(tmp_path, primary.url, backup.url, other)
        exchanges: list[Exchange] = []
        settings = {"retries": 2}
        async with gateway_for(config_path=config, settings=settings) as gw:
            gw.context.observers.append(exchanges.append)
            rig = Rig(primary, gw, DRIVERS["openai-chat"], stream, exchanges)
            got = await rig.post(mode)
        if mode == "off" and other != "openai-chat":
            # A pass-through is the client's own bytes: it falls back only to its own wire.
            assert len(backup.requests) == 0 and got.status == 503
            return
        assert len(primary.requests) == 3 and len(backup.requests) == 1
    assert got.status == 200 and "Fallback" in got.text
    assert exchanges[0].upstream == "backup" and "fell back" in (exchanges[0].note or "")


@over_streams
@pytest.mark.parametrize("other", ["openai-chat", "anthropic-messages"])
async def test_a_continuation_round_falls_back_when_the_upstream_goes_down(
    tmp_path: Any, stream: bool, other: str
) -> None:
    """Hybrid: the primary answers the first round with a ``skill_state`` call, which the
    gateway answers itself; the continuation finds the primary down (503 until its retries are
    spent), and the fallback serves it with the call and its answer in what it is sent."""
    call = ScriptedCall("skill_state", {"patch": {"objective": "x"}}, id="call_s")
    down = [Reply.failure(503, "down", headers=FAST) for _ in range(3)]
    async with (
        ScriptedUpstream(Script([Reply(calls=[call]), *down])) as primary,
        ScriptedUpstream(Script([Reply(text="Fallback here")])) as backup,
    ):
        config = _fallback_config(tmp_path, primary.url, backup.url, other)
        exchanges: list[Exchange] = []
        settings = {"retries": 2, "collapse": TOOLS_AT_ONCE}
        async with gateway_for(config_path=config, settings=settings) as gw:
            gw.context.observers.append(exchanges.append)
            got = await Rig(primary, gw, DRIVERS["openai-chat"], stream).post("hybrid")
        assert len(primary.requests) == 4 and len(backup.requests) == 1
        calls, results = calls_and_results(backup.requests[0])
    assert got.status == 200 and "Fallback" in got.text
    assert "skill_state" not in got.text  # the hidden round stays hidden
    assert [c.id for c in calls if c.name == "skill_state"] == ["call_s"]
    assert "call_s" in results  # the continuation, not the first request again
    [exchange] = exchanges
    assert exchange.attempts == [200, 503, 503, 503, 200]
    assert exchange.upstream == "backup" and "fell back" in (exchange.note or "")


async def test_a_pass_through_falls_back_only_to_its_own_wire(tmp_path: Any) -> None:
    down = Script([Reply.failure(500, "down")])
    async with (
        ScriptedUpstream(down) as primary,
        ScriptedUpstream(Script([])) as other_wire,
    ):
        config = _config(
            tmp_path,
            f'[[upstreams]]\nname = "primary"\nbase_url = "{primary.url}"\n'
            f'fallbacks = ["other"]\n'
            f'[[upstreams]]\nname = "other"\nbase_url = "{other_wire.url}"\n'
            'wire = "anthropic-messages"\nmodels = ["none-*"]\n',
        )
        async with gateway_for(config_path=config, settings={"retries": 0}) as gw:
            rig = Rig(primary, gw, DRIVERS["openai-chat"], False, [])
            got = await rig.post("off")  # the client's bytes cannot go to another wire
        assert len(other_wire.requests) == 0
    assert got.status == 500


async def test_fallbacks_must_name_configured_upstreams(tmp_path: Any) -> None:
    from skillstate.config import ConfigError, load_settings

    config = _config(
        tmp_path, '[[upstreams]]\nname = "a"\nbase_url = "http://127.0.0.1:9"\nfallbacks = ["b"]\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_settings(environ={}, config_path=config)
    assert "fallbacks must name other configured upstreams" in str(caught.value.problems)


@over_pairs
async def test_a_request_over_the_rate_limit_waits_or_gets_a_429(
    tmp_path: Any, pair: tuple[str, str]
) -> None:
    client, wire = pair
    replies = Script([Reply(text="one"), Reply(text="two")])
    async with ScriptedUpstream(replies) as up:
        config = _config(
            tmp_path,
            f'[[upstreams]]\nname = "limited"\nbase_url = "{up.url}"\nwire = "{wire}"\nrpm = 1\n',
        )
        async with gateway_for(config_path=config) as gw:
            rig = Rig(up, gw, DRIVERS[client], False, [])
            assert (await rig.post("off")).status == 200
            refused = await rig.post("off")  # would wait a minute: refused at once
        assert len(up.requests) == 1
    assert refused.status == 429 and int(refused.headers["retry-after"]) >= 50
    assert "rate limit" in refused.text


@over_pairs
@over_modes
async def test_a_stream_over_the_rate_limit_gets_the_wires_429_before_the_first_byte(
    tmp_path: Any, pair: tuple[str, str], mode: str
) -> None:
    """The gateway's own limit refuses a stream before anything was sent: a real HTTP 429 in
    the client wire's error shape, with ``retry-after``, not an error event in a stream."""
    client, wire = pair
    async with ScriptedUpstream(Script([Reply(text="one"), Reply(text="two")])) as up:
        config = _config(
            tmp_path,
            f'[[upstreams]]\nname = "limited"\nbase_url = "{up.url}"\nwire = "{wire}"\nrpm = 1\n',
        )
        async with gateway_for(config_path=config) as gw:
            rig = Rig(up, gw, DRIVERS[client], True)
            first = await rig.post(mode)
            refused = await rig.post(mode)  # would wait a minute: refused at once
        assert len(up.requests) == 1
    assert first.status == 200 and rig.driver.terminal in first.body
    assert refused.status == 429 and int(refused.headers["retry-after"]) >= 50
    assert refused.headers["content-type"].startswith("application/json")
    error = json.loads(refused.body)
    if client == "anthropic-messages":
        assert error["type"] == "error" and error["error"]["type"] == "rate_limit_error"
    else:
        assert error["error"]["code"] == "rate_limit_exceeded"
    assert "rate limit" in refused.text


async def test_a_request_alone_over_the_token_limit_is_refused(tmp_path: Any) -> None:
    async with ScriptedUpstream(Script([])) as up:
        config = _config(
            tmp_path, f'[[upstreams]]\nname = "small"\nbase_url = "{up.url}"\ntpm = 5\n'
        )
        async with gateway_for(config_path=config) as gw:
            rig = Rig(up, gw, DRIVERS["anthropic-messages"], False, [])
            refused = await rig.post("off")
        assert len(up.requests) == 0
    assert refused.status == 429 and "alone are over its limit" in refused.text
    assert "retry-after" not in refused.headers  # waiting would not help


SCREENSHOT = "data:image/png;base64," + base64.b64encode(bytes(150_000)).decode()
"""An image of 200,000 base64 characters: 50,000 tokens counted as text, some 1,600 billed."""
IMAGE_BODIES: dict[str, tuple[str, dict[str, Any]]] = {
    "openai-chat": ("/v1/chat/completions", {"model": "m", "max_tokens": 8, "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "What is it?"},
            {"type": "image_url", "image_url": {"url": SCREENSHOT}},
        ]},
    ]}),
    "openai-responses": ("/v1/responses", {"model": "m", "max_output_tokens": 8, "input": [
        {"role": "user", "content": [
            {"type": "input_text", "text": "What is it?"},
            {"type": "input_image", "image_url": SCREENSHOT},
        ]},
    ]}),
    "anthropic-messages": ("/v1/messages", {"model": "m", "max_tokens": 8, "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "What is it?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": SCREENSHOT.split(",", 1)[1]}},
        ]},
    ]}),
}  # fmt: skip


@over_modes
@pytest.mark.parametrize("client", sorted(IMAGE_BODIES))
async def test_an_image_counts_against_the_token_limit_by_its_pixels_not_its_bytes(
    tmp_path: Any, client: str, mode: str
) -> None:
    """A screenshot's base64 is not its tokens: under a limit of 20,000 tokens a minute, a
    request with one (200,000 characters of it) goes up, in each wire, relayed or decoded."""
    path, body = IMAGE_BODIES[client]
    async with ScriptedUpstream(Script([Reply(text="A screenshot.")])) as up:
        config = _config(
            tmp_path,
            f'[[upstreams]]\nname = "small"\nbase_url = "{up.url}"\nwire = "{client}"\n'
            "tpm = 20000\n",
        )
        async with (
            gateway_for(config_path=config) as gw,
            aiohttp.ClientSession() as http,
            http.post(gw.url + path, json=body, headers={"x-skillstate-mode": mode}) as reply,
        ):
            said = await reply.text()
        assert reply.status == 200, said
        [sent] = up.requests
    assert SCREENSHOT.split(",", 1)[1].encode() in sent.body  # the image went up whole
