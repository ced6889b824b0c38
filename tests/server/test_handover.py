"""Hybrid mode's default: a session goes upstream as pass-through would send it until its first
boundary, which starts with the handover round (the model writes Σ from the whole history) and
then brings Σ and the internal tools. Every client wire against its own and another upstream
wire, JSON and streams (``state.handover``)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from internal_tools_clients import DRIVERS, PAIR_IDS, PAIRS, Driver, Step, upstream_messages

from skillstate.conversation import Text, Wire
from skillstate.economics.counterfactual import blocks_of
from skillstate.gateway import RunningGateway
from skillstate.protocols import adapter
from skillstate.state.engine import StateEngine
from skillstate.state.handover import HANDOVER_HEADING, patch_tokens
from skillstate.support import jsonio
from skillstate.testing import Reply, ScriptedCall, ScriptedError, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Policy, Script
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.session_view import tool_names

over_pairs = pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
over_streams = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
#: A boundary as soon as one is asked for (``request_collapse``), keeping the newest turn.
EAGER = {"min_turns": 0, "keep_recent_turns": 1}
HISTORY = [Step(f"call_k{n}", f"k{n}", f"value of k{n} is v{n}") for n in range(1, 4)]
SIGMA = "Session state Σ"
INTERNAL = {"skill_state", "recall"}
_sessions = itertools.count()


@contextlib.asynccontextmanager
async def rigged(
    pair: tuple[str, str], policy: Policy, **collapse: Any
) -> AsyncIterator[tuple[ScriptedUpstream, RunningGateway, Driver]]:
    client, upstream = pair
    settings = {"collapse": collapse} if collapse else {}
    async with (
        ScriptedUpstream(policy) as up,
        gateway_for(up.url, wire=upstream, settings=settings) as gw,
    ):
        yield up, gw, DRIVERS[client]


def engine_of(gw: RunningGateway) -> StateEngine:
    engine = gw.context.engine
    assert isinstance(engine, StateEngine)
    return engine


def texts(recorded: RecordedRequest) -> list[str]:
    return [
        part.text
        for message in upstream_messages(recorded)
        for part in message.parts
        if isinstance(part, Text)
    ]


async def cost(gw: RunningGateway) -> Any:
    async with aiohttp.ClientSession() as http, http.get(gw.url + "/cost") as reply:
        return (await reply.json())["totals"]


@over_pairs
@over_streams
async def test_until_its_first_boundary_a_session_goes_upstream_as_pass_through_sends_it(
    pair: tuple[str, str], stream: bool
) -> None:
    """Byte for byte what mode off sends, request after request: no internal tools, no Σ."""
    sent: dict[str, list[bytes]] = {}
    for mode in ("off", "hybrid"):
        async with rigged(pair, Script([Reply(text="ok")] * 3)) as (up, gw, driver):
            headers = {"x-skillstate-session": "same", "x-skillstate-mode": mode}
            for n in range(3):
                await driver.call(
                    gw.url, driver.body("Look up k1.", HISTORY[:n], stream=stream), headers
                )
            sent[mode] = [r.body for r in up.requests]
            if mode == "hybrid":
                assert all(not INTERNAL & tool_names(r) for r in up.requests)
    assert len(sent["hybrid"]) == 3
    assert sent["hybrid"] == sent["off"]


@over_pairs
@over_streams
async def test_the_first_boundary_hands_over_then_collapses_with_the_models_sigma(
    pair: tuple[str, str], stream: bool
) -> None:
    patch = {"findings": {"k2": "k2 is v2, read at step 2"}}
    script = Script(
        [
            Reply(text=jsonio.dumps_str(patch), input_tokens=100, output_tokens=20),
            Reply(text="Done.", input_tokens=30, output_tokens=5),
        ]
    )
    async with rigged(pair, script, **EAGER) as (up, gw, driver):
        session = f"handover-{next(_sessions)}"
        await engine_of(gw).request_collapse(session)
        body = driver.body("Look up k1.", HISTORY, stream=stream)
        seen = await driver.call(gw.url, body, {"x-skillstate-session": session})
        state = (await engine_of(gw).store.load(session)).state
        totals = await cost(gw)
    assert seen.text == "Done." and seen.calls == []
    assert seen.usage == (130, 25)  # both rounds, as the provider billed them
    handover, boundary = up.requests
    # The handover: the client's request as it came, the instruction appended last.
    assert texts(handover)[-1].startswith(HANDOVER_HEADING)
    assert not INTERNAL & tool_names(handover)
    assert len(upstream_messages(handover)) >= len(upstream_messages(boundary))
    # The boundary request: Σ with the model's patch, the internal tools, no instruction.
    assert SIGMA in boundary.body.decode() and "k2 is v2, read at step 2" in boundary.body.decode()
    assert tool_names(boundary) >= INTERNAL
    assert not any(t.startswith(HANDOVER_HEADING) for t in texts(boundary))
    assert state["findings"]["k2"] == "k2 is v2, read at step 2"
    # The ledger: two upstream requests for one client request, the handover state overhead.
    assert (totals["requests"], totals["client_requests"]) == (2, 1)
    assert totals["state_overhead_requests"] == 1
    assert totals["state_overhead_input_tokens"] == 100


@over_pairs
@pytest.mark.parametrize(
    "handover",
    [
        Reply(text="I will look at k3 next."),
        Reply(text='{"findings": ["a list where Σ keeps an object"]}'),
        Reply(error=ScriptedError(500, "the model fell over", "api_error")),
    ],
    ids=["prose", "refused-patch", "upstream-error"],
)
@over_streams
async def test_a_handover_that_brings_no_patch_leaves_the_boundary_to_the_seed(
    pair: tuple[str, str], handover: Reply, stream: bool
) -> None:
    """Not retried, never the reason the request fails: the boundary goes on with the Σ the
    seed made and the archive behind it."""
    async with rigged(pair, Script([handover, Reply(text="Done.")]), **EAGER) as (up, gw, driver):
        session = f"quiet-{next(_sessions)}"
        engine = engine_of(gw)
        await engine.request_collapse(session)
        body = driver.body("Look up k1.", HISTORY, stream=stream)
        seen = await driver.call(gw.url, body, {"x-skillstate-session": session})
        state = (await engine.store.load(session)).state
        report = await engine.describe(session)
    assert seen.text == "Done."
    assert len(up.requests) == 2
    boundary = up.requests[1]
    assert SIGMA in boundary.body.decode() and tool_names(boundary) >= INTERNAL
    assert "findings" not in state or isinstance(state["findings"], dict)
    assert report is not None
    assert report["context"]["handover"] not in ("applied", "asked")


CLIENT_SETTINGS = {
    "openai-chat": {"max_tokens": 40, "tool_choice": "auto"},
    "openai-responses": {"max_output_tokens": 40, "tool_choice": "auto"},
    "anthropic-messages": {"max_tokens": 40, "tool_choice": {"type": "auto"}},
}
"""Defect 8 of issue 25: a client asking for 40 tokens at most, and naming its tool choice."""


@over_pairs
@over_streams
async def test_the_handover_goes_with_its_own_settings_and_the_clients_round_with_its(
    pair: tuple[str, str], stream: bool
) -> None:
    """Not streamed, an output limit that holds the largest patch Σ takes, whatever the
    client asked for its own answer (its round keeps all of it); a tool choice that forces
    nothing stays as it was (a changed one would cost Anthropic's cache)."""
    client, upstream = pair
    patch = {"findings": {"k2": "k2 is v2"}}
    script = Script([Reply(text=jsonio.dumps_str(patch)), Reply(text="Done.")])
    async with rigged(pair, script, **EAGER) as (up, gw, driver):
        session = f"settings-{next(_sessions)}"
        engine = engine_of(gw)
        await engine.request_collapse(session)
        body = {**driver.body("Look up k1.", HISTORY, stream=stream), **CLIENT_SETTINGS[client]}
        seen = await driver.call(gw.url, body, {"x-skillstate-session": session})
        state = (await engine.store.load(session)).state
        limit = patch_tokens(engine.config.schema.bounds)
    assert seen.text == "Done." and state["findings"]["k2"] == "k2 is v2"
    handover, boundary = (
        adapter(Wire(upstream)).decode_request(jsonio.loads(r.body)).params for r in up.requests
    )
    assert not up.requests[0].stream and handover.stream is False
    assert handover.max_tokens == limit
    assert up.requests[1].stream is stream and boundary.max_tokens == 40
    for sent in (handover, boundary):
        assert sent.tool_choice is not None and sent.tool_choice.mode == "auto"


@over_pairs
async def test_no_handover_when_the_client_forces_a_tool_call(pair: tuple[str, str]) -> None:
    client, _ = pair
    forced = {"anthropic-messages": {"type": "any"}}.get(client, "required")
    async with rigged(pair, Script([Reply(text="Done.")]), **EAGER) as (up, gw, driver):
        session = f"forced-{next(_sessions)}"
        await engine_of(gw).request_collapse(session)
        body = {**driver.body("Look up k1.", HISTORY, stream=False), "tool_choice": forced}
        await driver.call(gw.url, body, {"x-skillstate-session": session})
    (boundary,) = up.requests
    assert SIGMA in boundary.body.decode()
    assert not any(t.startswith(HANDOVER_HEADING) for t in texts(boundary))


@over_pairs
@over_streams
async def test_a_later_boundary_does_not_hand_over_again(
    pair: tuple[str, str], stream: bool
) -> None:
    replies = [Reply(text="{}"), Reply(text="First."), Reply(text="Second.")]
    async with rigged(pair, Script(replies), **EAGER) as (up, gw, driver):
        session = f"later-{next(_sessions)}"
        engine = engine_of(gw)
        headers = {"x-skillstate-session": session}
        await engine.request_collapse(session)
        await driver.call(gw.url, driver.body("Look up k1.", HISTORY[:2], stream=stream), headers)
        await engine.request_collapse(session)
        seen = await driver.call(
            gw.url, driver.body("Look up k1.", HISTORY, stream=stream), headers
        )
        epoch = (await engine.describe(session) or {}).get("epoch") or {}
    assert seen.text == "Second."
    assert len(up.requests) == 3
    assert sum(any(t.startswith(HANDOVER_HEADING) for t in texts(r)) for r in up.requests) == 1
    assert epoch.get("number") == 2


async def test_without_the_handover_the_first_boundary_is_one_request() -> None:
    pair = ("openai-chat", "openai-chat")
    async with rigged(pair, Script([Reply(text="Done.")]), **EAGER, handover=False) as rig:
        up, gw, driver = rig
        session = f"no-handover-{next(_sessions)}"
        await engine_of(gw).request_collapse(session)
        body = driver.body("Look up k1.", HISTORY, stream=False)
        await driver.call(gw.url, body, {"x-skillstate-session": session})
    (boundary,) = up.requests
    assert SIGMA in boundary.body.decode() and tool_names(boundary) >= INTERNAL


async def rows(gw: RunningGateway) -> list[Any]:
    async with aiohttp.ClientSession() as http, http.get(gw.url + "/cost/requests") as reply:
        found: list[Any] = (await reply.json())["requests"]
    return sorted(found, key=lambda row: row["round"])


@over_pairs
@over_streams
async def test_a_handover_then_an_internal_round_are_each_a_row_with_its_cause(
    pair: tuple[str, str], stream: bool
) -> None:
    state = ScriptedCall("skill_state", {"patch": {"step": 3}}, id="call_state1")
    script = Script([Reply(text="{}"), Reply(calls=[state]), Reply(text="Done.")])
    async with rigged(pair, script, **EAGER) as (up, gw, driver):
        session = f"causes-{next(_sessions)}"
        await engine_of(gw).request_collapse(session)
        body = driver.body("Look up k1.", HISTORY, stream=stream)
        seen = await driver.call(gw.url, body, {"x-skillstate-session": session})
        found = await rows(gw)
    assert seen.text == "Done." and len(up.requests) == 3
    assert [(row["round"], row["cause"]) for row in found] == [
        (0, "handover"),
        (1, ""),
        (2, "state"),
    ]


async def test_a_failing_handover_is_tried_once_and_the_clients_round_keeps_its_retries() -> None:
    """The handover is optional: one attempt, no retry schedule, no fallback, no move of the
    circuit breaker; the client's own round then gets the retries it always had."""
    overloaded = ScriptedError(503, "overloaded", "overloaded_error")
    script = Script([Reply(error=overloaded), Reply(error=overloaded), Reply(text="Done.")])
    pair = ("openai-chat", "openai-chat")
    async with (
        ScriptedUpstream(script) as up,
        gateway_for(
            up.url, settings={"collapse": EAGER, "retries": 1, "retry_max_wait": 0.01}
        ) as gw,
    ):
        driver = DRIVERS[pair[0]]
        session = f"overloaded-{next(_sessions)}"
        await engine_of(gw).request_collapse(session)
        body = driver.body("Look up k1.", HISTORY, stream=False)
        seen = await driver.call(gw.url, body, {"x-skillstate-session": session})
        async with aiohttp.ClientSession() as http, http.get(gw.url + "/health") as health:
            circuit = (await health.json())["upstreams"][0]["circuit"]
    generation = [r for r in up.requests if r.wire is not None]
    assert seen.text == "Done."
    assert len(generation) == 3  # the handover once; the client's round, retried once
    handovers = [texts(r)[-1].startswith(HANDOVER_HEADING) for r in generation]
    assert handovers == [True, False, False]
    assert circuit == "closed"


async def test_a_failed_round_after_a_handover_estimates_pass_through_by_the_request() -> None:
    """With no reply to the client's own round, its pass-through estimate is not calibrated by
    the handover's count (which holds the whole history and the instruction)."""
    failed = ScriptedError(400, "bad request", "invalid_request_error")
    script = Script([Reply(text="{}", input_tokens=50_000), Reply(error=failed)])
    pair = ("openai-chat", "openai-chat")
    async with rigged(pair, script, **EAGER) as (_, gw, driver):
        session = f"failed-{next(_sessions)}"
        await engine_of(gw).request_collapse(session)
        body = driver.body("Look up k1.", HISTORY, stream=False)
        async with (
            aiohttp.ClientSession() as http,
            http.post(
                gw.url + driver.path, json=body, headers={"x-skillstate-session": session}
            ) as reply,
        ):
            assert reply.status == 400
        found = await rows(gw)
    client = adapter(Wire.CHAT).decode_request(body)
    assert [row["cause"] for row in found] == ["handover"]
    assert found[0]["passthrough_input"] == pytest.approx(blocks_of(client).total, rel=0.01)
