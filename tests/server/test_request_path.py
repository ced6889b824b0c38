"""The one request path on every path it can take: each client wire against its own upstream
wire and another one, JSON and stream, mode off and hybrid, first round and continuation
rounds, before and after the first byte. Real loopback servers: the scripted upstream, the
gateway, an aiohttp client."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from internal_tools_clients import DRIVERS
from rig import Got, Rig, over_modes, over_pairs, over_streams, rigged

from skillstate.conversation import Request, Wire
from skillstate.pipeline import LaneContext, LaneOutcome
from skillstate.state.rounds import Policy as RoundPolicy
from skillstate.testing import Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script


def provider_headers(upstream_wire: str) -> dict[str, str]:
    """The headers a provider of ``upstream_wire``'s family sends with a reply."""
    if upstream_wire == "anthropic-messages":
        return {
            "request-id": "req_up_1",
            "anthropic-ratelimit-requests-remaining": "41",
            "anthropic-ratelimit-tokens-reset": "2026-12-01T20:00:00Z",
            "retry-after": "7",
        }
    return {
        "x-request-id": "req_up_1",
        "x-ratelimit-remaining-requests": "41",
        "x-ratelimit-reset-tokens": "6m0s",
        "retry-after": "7",
    }


def assert_relayed(got: Got, client_wire: str, upstream_wire: str) -> None:
    """The provider's request id, rate limit and retry-after reached the client, under the
    client wire's names where it has one."""
    lowered = got.headers
    assert lowered.get("retry-after") == "7", got.headers
    if client_wire == "anthropic-messages":
        assert lowered.get("request-id") == "req_up_1", got.headers
        assert lowered.get("anthropic-ratelimit-requests-remaining") == "41", got.headers
    else:
        assert lowered.get("x-request-id") == "req_up_1", got.headers
        assert lowered.get("x-ratelimit-remaining-requests") == "41", got.headers
    # A reset header has no equivalent form: it keeps the upstream's own name.
    reset = (
        "anthropic-ratelimit-tokens-reset"
        if upstream_wire == "anthropic-messages"
        else "x-ratelimit-reset-tokens"
    )
    assert reset in lowered, got.headers


OPENING = {
    "openai-chat": re.compile(r'"role":\s*"assistant"'),  # the first chunk's delta names it
    "openai-responses": re.compile(r"^event: response\.created$", re.MULTILINE),
    "anthropic-messages": re.compile(r"^event: message_start$", re.MULTILINE),
}


def openings(got: Got, client_wire: str) -> int:
    """How many times the client's stream opened a reply: once, also when a round failed or
    the upstream's stream was cut (never a second opening before the error event)."""
    return len(OPENING[client_wire].findall(got.text))


# --- upstream response headers --------------------------------------------------------------


@over_pairs
@over_streams
@over_modes
async def test_upstream_headers_reach_the_client(
    pair: tuple[str, str], stream: bool, mode: str
) -> None:
    reply = Reply(text="Found", headers=provider_headers(pair[1]))
    async with rigged(pair, stream, Script([reply])) as rig:
        got = await rig.post(mode)
    assert got.status == 200, got.body
    assert "Found" in got.text
    assert_relayed(got, *pair)


@over_pairs
@over_streams
@over_modes
async def test_an_upstream_error_keeps_its_status_kind_message_and_headers(
    pair: tuple[str, str], stream: bool, mode: str
) -> None:
    refusal = Reply.failure(429, "slow down, please", headers=provider_headers(pair[1]))
    async with rigged(pair, stream, Script([refusal])) as rig:
        got = await rig.post(mode)
    assert got.status == 429, got.body
    assert "slow down, please" in got.text
    assert "rate_limit" in got.text  # the kind, in the client wire's words
    assert_relayed(got, *pair)


# --- errors in a continuation round ------------------------------------------------------


def _state_call() -> ScriptedCall:
    return ScriptedCall("skill_state", {"patch": {"objective": "x"}}, id="call_state1")


@over_pairs
@over_streams
async def test_an_error_in_a_continuation_round_reaches_the_client_with_its_status(
    pair: tuple[str, str], stream: bool
) -> None:
    script = Script(
        [
            Reply(calls=[_state_call()]),
            Reply.failure(429, "too many requests today", headers=provider_headers(pair[1])),
        ]
    )
    async with rigged(pair, stream, script) as rig:
        got = await rig.post("hybrid")
        assert len(rig.upstream.requests) == 2
    # Nothing visible was sent before the hidden round failed: a real HTTP error.
    assert got.status == 429, got.body
    assert "too many requests today" in got.text and "rate_limit" in got.text
    assert "skill_state" not in got.text
    assert_relayed(got, *pair)


@over_pairs
async def test_an_error_after_the_first_byte_ends_the_stream_with_the_wires_error_event(
    pair: tuple[str, str],
) -> None:
    script = Script(
        [
            Reply(text="Checking the state first.", calls=[_state_call()]),
            Reply.failure(529 if pair[1] == "anthropic-messages" else 503, "model is busy"),
        ]
    )
    async with rigged(pair, True, script) as rig:
        got = await rig.post("hybrid")
    assert got.status == 200
    assert "Checking" in got.text
    assert "model is busy" in got.text  # the upstream's message, in the client's error event
    assert "HTTP/1.1" not in got.text  # never a second response inside the body
    assert openings(got, pair[0]) == 1  # nor a second opening for the failed round
    if pair[0] == "anthropic-messages":
        assert "event: error" in got.text and "overloaded_error" in got.text
    elif pair[0] == "openai-chat":
        assert got.text.rstrip().endswith("data: [DONE]")
    else:
        assert '"type":"error"' in got.text.replace(" ", "")


@over_pairs
@over_modes
async def test_a_stream_that_breaks_mid_way_ends_cleanly(pair: tuple[str, str], mode: str) -> None:
    """The upstream's own error event mid-stream: the client gets the text so far, then its
    wire's error event, and the connection closes cleanly (the read completes)."""
    script = Script([Reply.failure(500, "upstream exploded", mid_stream=True)])
    async with rigged(pair, True, script) as rig:
        got = await rig.post(mode)
    assert got.status == 200
    assert "Partial" in got.text and "upstream exploded" in got.text
    assert openings(got, pair[0]) == 1


@over_pairs
async def test_a_later_round_that_breaks_mid_way_opens_nothing_twice(pair: tuple[str, str]) -> None:
    """Hybrid: the first round's text opened the client's stream; the continuation's own
    stream opens upstream, then breaks. The client gets both rounds' text under one opening,
    then its wire's error event."""
    script = Script(
        [
            Reply(text="Checking the state first.", calls=[_state_call()]),
            Reply.failure(500, "upstream exploded", mid_stream=True),
        ]
    )
    async with rigged(pair, True, script) as rig:
        got = await rig.post("hybrid")
        assert len(rig.upstream.requests) == 2
    assert got.status == 200
    assert "Checking" in got.text and "Partial" in got.text and "upstream exploded" in got.text
    assert openings(got, pair[0]) == 1


# --- the internal tools never take a client's tool ----------------------------------------


def _named(body: dict[str, Any], wire: str, name: str) -> dict[str, Any]:
    """``body`` with its one tool renamed ``name``."""
    body = json.loads(json.dumps(body))
    tool = body["tools"][0]
    if wire == "openai-chat":
        tool["function"]["name"] = name
    else:
        tool["name"] = name
    return body


@over_pairs
@over_streams
@pytest.mark.parametrize("name", ["recall", "skill_state"])
async def test_a_clients_own_tool_named_like_ours_is_the_clients(
    pair: tuple[str, str], stream: bool, name: str
) -> None:
    call = ScriptedCall(name, {"ref": "mine"} if name == "recall" else {"patch": {}}, id="c1")
    async with rigged(pair, stream, Script([Reply(calls=[call])])) as rig:
        body = _named(rig.driver.body("Use your tool.", [], stream=stream), pair[0], name)
        got = await rig.post("hybrid", body)
        assert len(rig.upstream.requests) == 1  # not answered by the gateway: no second round
        offered = _tool_names(rig.upstream.requests[0].json, pair[1])
    assert got.status == 200, got.body
    assert name in got.text and "c1" in got.text  # the client got its own call
    assert offered.count(name) == 1  # the client's tool, once
    assert f"skillstate_{name}" in offered  # ours, under a name that cannot collide


def _tool_names(body: dict[str, Any], wire: str) -> list[str]:
    if wire == "openai-chat":
        return [t["function"]["name"] for t in body["tools"]]
    return [t["name"] for t in body["tools"]]


# --- the lane list -----------------------------------------------------------------------


class BrokenLane:
    name = "broken"

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        raise RuntimeError("this lane always fails")


@over_streams
async def test_a_failing_lane_is_skipped_and_named_in_the_lanes_header(stream: bool) -> None:
    pair = ("openai-chat", "openai-chat")
    async with rigged(pair, stream, Script([Reply(text="Fine anyway.")])) as rig:
        rig.gateway.context.lanes.insert(0, BrokenLane())
        got = await rig.post("hybrid")
    assert got.status == 200 and "Fine" in got.text
    lanes = got.headers["x-skillstate-lanes"]
    assert "broken=failed:RuntimeError" in lanes and "state=hybrid" in lanes


async def test_the_state_lane_switched_off_in_config_leaves_requests_as_sent() -> None:
    pair = ("openai-chat", "openai-chat")
    off = {"lanes": {"state": {"enabled": False}}}
    async with rigged(pair, False, Script([Reply(text="As sent.")]), **off) as rig:
        body = rig.driver.body("Look up k1.", [], stream=False)
        got = await rig.post("hybrid", body)
        sent = rig.upstream.requests[0].json
    assert got.status == 200
    assert "x-skillstate-mode" not in got.headers and "x-skillstate-lanes" not in got.headers
    assert sent == body  # no internal tools, no Σ


async def test_a_request_for_several_choices_is_left_to_the_client() -> None:
    """The round loop continues one reply; with n > 1 the others would be lost, so the state
    lane leaves the request alone and the reply passes through whole."""
    pair = ("openai-chat", "openai-chat")
    async with rigged(pair, True, Script([Reply(text="One of two.")])) as rig:
        body = {**rig.driver.body("Look up k1.", [], stream=True), "n": 2}
        got = await rig.post("hybrid", body)
        sent = rig.upstream.requests[0].json
    assert got.status == 200
    assert sent == body and "x-skillstate-mode" not in got.headers


# --- one log line per request ------------------------------------------------------------


@over_streams
async def test_each_request_is_one_log_line_at_debug(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    pair = ("anthropic-messages", "openai-chat")
    script = Script([Reply(calls=[_state_call()]), Reply(text="Logged.")])
    with caplog.at_level(logging.DEBUG, logger="skillstate.requests"):
        async with rigged(pair, stream, script) as rig:
            got = await rig.post("hybrid")
    assert got.status == 200
    lines = [r.getMessage() for r in caplog.records if r.name == "skillstate.requests"]
    assert len(lines) == 1, lines
    line = lines[0]
    for piece in (
        f"session={got.headers['x-skillstate-session']}",
        "mode=hybrid",
        f"{Wire.MESSAGES.value}->{Wire.CHAT.value}",
        "upstream=default",
        "status=200",
        "rounds=2",
        "lanes[state=hybrid",
        "ms",
    ):
        assert piece in line, line
    assert "in=" in line and "out=" in line and "in=0 " not in line


@dataclass
class FailingFollowup:
    """A lane's follow-up whose commit fails after the client's stream has begun."""

    policy: Any = None
    handover: Any = None
    untouched: bool = False

    async def handed_over(self, response: Any) -> Any:
        raise AssertionError("no handover was asked for")

    async def answer(self, call: Any) -> str:
        return ""

    async def check(self, response: Any) -> str | None:
        return None

    async def finish(self, response: Any) -> None:
        raise RuntimeError("the commit failed")

    def verdict(self) -> str | None:
        return None


class FailsAfterTheFirstByte:
    name = "late"

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        return LaneOutcome(request, followup=FailingFollowup(RoundPolicy()))


@over_pairs
async def test_a_gateway_failure_after_the_first_byte_ends_the_stream_in_the_wire(
    pair: tuple[str, str],
) -> None:
    async with rigged(pair, True, Script([Reply(text="Visible")])) as rig:
        rig.gateway.context.lanes.append(FailsAfterTheFirstByte())
        got = await rig.post("off")
    assert got.status == 200
    assert "Visible" in got.text and "internal gateway error" in got.text
    assert "HTTP/1.1" not in got.text
    assert openings(got, pair[0]) == 1


# --- an upstream connection that breaks mid-stream -----------------------------------------


class Truncating:
    """A loopback upstream that sends the first ``cut`` bytes of a real stream body, then drops
    the connection without ending the chunked body (what a crashed provider does)."""

    def __init__(self, body: bytes, cut: int, *, clean: bool = False) -> None:
        self.body, self.cut, self.clean = body, cut, clean
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
        await reader.readexactly(length)
        part = self.body[: self.cut]
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n" + f"{len(part):x}\r\n".encode() + part + b"\r\n"
        )
        await writer.drain()
        if self.clean:  # the body ends properly, but the stream's own end never came
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        await asyncio.sleep(0.3)  # the client has what was sent before the connection dies
        writer.transport.abort()


@over_pairs
@over_modes
async def test_an_upstream_that_drops_the_connection_mid_stream(
    pair: tuple[str, str], mode: str
) -> None:
    client, upstream = pair
    async with ScriptedUpstream(Script([Reply(text="Halfway there and more")])) as up:
        body = DRIVERS[upstream].body("Look up k1.", [], stream=True)
        async with (
            aiohttp.ClientSession() as session,
            session.post(up.url + DRIVERS[upstream].path, json=body) as r,
        ):
            full = await r.read()
    # Past the whole event that carries the first text, into the next one.
    cut = full.index(b"\n\n", full.index(b"Halfway")) + 20
    async with Truncating(full, cut) as url, gateway_for(url, wire=upstream) as gw:
        rig = Rig(up, gw, DRIVERS[client], True)
        got = await rig.post(mode)
    assert got.status == 200
    assert "Halfway" in got.text
    assert "stream broke" in got.text  # the client wire's own error event says why
    assert "HTTP/1.1" not in got.text
    assert openings(got, client) == 1  # no second opening before the error
    if client == "openai-chat":
        assert got.text.rstrip().endswith("data: [DONE]")
    elif client == "anthropic-messages":
        assert "event: error" in got.text


# --- paper mode: a rejected patch is visible, and size is never retried ---------------------


def _envelope(patch: dict[str, Any]) -> str:
    return json.dumps({"state_patch": patch, "action": "next step"})


@over_pairs
async def test_paper_a_patch_too_big_is_reported_and_not_retried(pair: tuple[str, str]) -> None:
    too_big = _envelope({"objective": "x" * 70_000})
    async with rigged(pair, False, Script([Reply(text=too_big)])) as rig:
        got = await rig.post("paper")
        assert len(rig.upstream.requests) == 1  # a retry cannot make it smaller
    assert got.status == 200
    verdict = got.headers["x-skillstate-state"]
    assert verdict.startswith("rejected; reason=") and "bytes" in verdict


@over_pairs
async def test_paper_a_streamed_patch_too_big_is_recorded_in_the_exchange(
    pair: tuple[str, str],
) -> None:
    """A stream's headers go out with its first event, before the envelope is whole and can be
    checked: the verdict cannot be a header there, so the exchange (the ledger's record and the
    request's log line) carries it."""
    too_big = _envelope({"objective": "x" * 70_000})
    async with rigged(pair, True, Script([Reply(text=too_big)])) as rig:
        got = await rig.post("paper")
        assert len(rig.upstream.requests) == 1
    assert got.status == 200 and rig.driver.terminal in got.body
    assert "x-skillstate-state" not in got.headers
    [exchange] = rig.exchanges
    note = exchange.note or ""
    assert note.startswith("rejected; reason=") and "bytes" in note, note


@over_pairs
async def test_paper_a_patch_of_the_wrong_shape_is_retried_then_reported(
    pair: tuple[str, str],
) -> None:
    wrong = _envelope({"plan": "not a list"})
    async with rigged(pair, False, lambda r: Reply(text=wrong)) as rig:
        got = await rig.post("paper")
        retries = rig.gateway.context.engine.config.paper_retries  # type: ignore[union-attr]
        assert len(rig.upstream.requests) == retries + 1
    assert got.headers["x-skillstate-state"].startswith("rejected; reason=")


@over_pairs
async def test_paper_an_applied_patch_says_nothing(pair: tuple[str, str]) -> None:
    good = _envelope({"objective": "add numbers"})
    async with rigged(pair, False, Script([Reply(text=good)])) as rig:
        got = await rig.post("paper")
    assert got.status == 200 and "x-skillstate-state" not in got.headers


@over_pairs
@over_modes
async def test_a_stream_that_ends_without_its_end_event_is_not_passed_on_as_complete(
    pair: tuple[str, str], mode: str
) -> None:
    """The HTTP body ends cleanly, but the wire's own end (``[DONE]``, ``message_stop``,
    ``response.completed``) never came: the client is told, in pass-through too."""
    client, upstream = pair
    async with ScriptedUpstream(Script([Reply(text="Halfway there and more")])) as up:
        body = DRIVERS[upstream].body("Look up k1.", [], stream=True)
        async with (
            aiohttp.ClientSession() as session,
            session.post(up.url + DRIVERS[upstream].path, json=body) as r,
        ):
            full = await r.read()
    cut = full.index(b"\n\n", full.index(b"Halfway")) + 2
    async with Truncating(full, cut, clean=True) as url, gateway_for(url, wire=upstream) as gw:
        got = await Rig(up, gw, DRIVERS[client], True).post(mode)
    assert got.status == 200 and "Halfway" in got.text
    assert "cut short" in got.text and "ended before its terminal event" in got.text
    assert openings(got, client) == 1
