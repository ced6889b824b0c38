"""The internal tool loop (DESIGN.md, "Internal tools"), through the gateway on real loopback:
the official SDKs as clients, a scripted upstream of the client's wire and of another wire,
JSON and streams. The model's calls to ``skill_state`` and ``recall`` are answered by the
gateway and never reach the client; the turn continues upstream within bounded rounds."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from internal_tools_clients import (
    DRIVERS,
    PAIR_IDS,
    PAIRS,
    Driver,
    Seen,
    Step,
    calls_and_results,
)
from rig import TOOLS_AT_ONCE

from skillstate.conversation import Json, StopReason, Text, ToolCall
from skillstate.economics.exchange import Exchange
from skillstate.gateway import RunningGateway
from skillstate.state.engine import StateEngine
from skillstate.testing import RecordedRequest, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Policy, Script

STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

PATCH = {"objective": "x", "findings": {"a": "b"}}
_sessions = itertools.count()


@dataclass
class Rig:
    """A scripted upstream, the gateway in front of it, and the client's driver."""

    upstream: ScriptedUpstream
    gateway: RunningGateway
    driver: Driver
    stream: bool

    @property
    def engine(self) -> StateEngine:
        engine = self.gateway.context.engine
        assert engine is not None
        return engine

    def session(self, **headers: str) -> dict[str, str]:
        return {"x-skillstate-session": f"loop-{next(_sessions)}", **headers}

    def body(self, task: str = "Look up k1.", steps: list[Step] | None = None) -> dict[str, Any]:
        return self.driver.body(task, steps or [], stream=self.stream)

    async def call(self, headers: dict[str, str], body: dict[str, Any] | None = None) -> Seen:
        return await self.driver.call(self.gateway.url, body or self.body(), headers)

    async def raw(self, headers: dict[str, str], body: dict[str, Any] | None = None) -> bytes:
        return await self.driver.raw(self.gateway.url, body or self.body(), headers)

    async def state(self, headers: dict[str, str]) -> Json:
        return (await self.engine.store.load(headers["x-skillstate-session"])).state


@contextlib.asynccontextmanager
async def rigged(pair: tuple[str, str], stream: bool, policy: Policy) -> AsyncIterator[Rig]:
    client, upstream = pair
    # The internal tools from the first request: these tests drive the round loop, which
    # runs the same way once a session's first boundary brought them.
    settings = {"collapse": TOOLS_AT_ONCE}
    async with (
        ScriptedUpstream(policy) as up,
        gateway_for(up.url, wire=upstream, settings=settings) as gw,
    ):
        yield Rig(up, gw, DRIVERS[client], stream)


def over_pairs(test: Any) -> Any:
    """Run ``test`` for every (client, upstream) pair, as JSON and as a stream."""
    return pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)(STREAMS(test))


def holds(state: Json, patch: Json) -> bool:
    """Whether ``state`` has every key of ``patch`` as it was patched (the deterministic seed
    may have filled other keys)."""
    return all(state.get(key) == value for key, value in patch.items())


def state_call(patch: Json, call_id: str = "call_state1") -> ScriptedCall:
    return ScriptedCall("skill_state", {"patch": patch}, id=call_id)


# --- skill_state answered, hidden, and the turn continued ----------------------------------


def _hidden_round_script() -> list[Reply]:
    return [
        Reply(calls=[state_call(PATCH)], input_tokens=100, output_tokens=7),
        Reply(text="All done here.", input_tokens=130, output_tokens=9),
    ]


@over_pairs
async def test_skill_state_is_answered_hidden_and_the_turn_continued(
    pair: tuple[str, str], stream: bool
) -> None:
    exchanges: list[Exchange] = []
    async with rigged(pair, stream, Script(_hidden_round_script() * 2)) as rig:
        rig.gateway.context.observers.append(exchanges.append)
        headers = rig.session()
        seen = await rig.call(headers)
        assert seen == Seen("All done here.", [], "end_turn", (230, 16))
        assert holds(await rig.state(headers), PATCH)
        assert len(rig.upstream.requests) == 2
        calls, results = calls_and_results(rig.upstream.requests[1])
        assert [(c.id, c.name) for c in calls] == [("call_state1", "skill_state")]
        assert results["call_state1"].startswith("State updated")
        raw = await rig.raw(rig.session())
        assert b"All" in raw
        assert b"skill_state" not in raw and b"call_state1" not in raw
        assert b"State updated" not in raw
        assert len(rig.upstream.requests) == 4
    # What the observers (the ledger) get is the reply the client saw, with both rounds' usage.
    for exchange in exchanges:
        assert exchange.response is not None and exchange.status == 200
        assert [p.text for p in exchange.response.message.parts if isinstance(p, Text)] == [
            "All done here."
        ]
        assert not any(isinstance(p, ToolCall) for p in exchange.response.message.parts)
        assert exchange.response.stop_reason is StopReason.END
        usage = exchange.response.usage
        assert (usage.input, usage.output) == (230, 16)
        assert (exchange.first_byte_s is not None) is stream
    assert len(exchanges) == 2


# --- recall over a collapsed history --------------------------------------------------------

FACT = "The vault code is ZEBRA-42."


def _long_history() -> list[Step]:
    return [
        Step(f"call_look{i}", f"k{i}", FACT if i == 2 else f"value {i} is unremarkable")
        for i in range(14)
    ]


def _recall_policy(request: RecordedRequest) -> Reply:
    """Recall by the ref the Σ message names, then by query, then answer."""
    if request.index == 0:
        found = re.search(r"archived as `([^`]+)`", request.body.decode())
        assert found is not None, "the first request carries no Σ message with a ref"
        return Reply(calls=[ScriptedCall("recall", {"ref": found[1]}, id="call_recall1")])
    if request.index == 1:
        return Reply(calls=[ScriptedCall("recall", {"query": "ZEBRA"}, id="call_recall2")])
    return Reply(text="The code is ZEBRA-42.")


@over_pairs
async def test_recall_returns_archived_text_by_ref_and_by_query(
    pair: tuple[str, str], stream: bool
) -> None:
    async with rigged(pair, stream, _recall_policy) as rig:
        headers = rig.session()
        await rig.engine.request_collapse(headers["x-skillstate-session"])
        seen = await rig.call(headers, rig.body("Find the vault code.", _long_history()))
        assert seen.text == "The code is ZEBRA-42." and seen.calls == []
        assert seen.stop == "end_turn"
        first, by_ref, by_query = rig.upstream.requests
        assert b"ZEBRA" not in first.body  # collapsed out of what went upstream
        assert FACT in calls_and_results(by_ref)[1]["call_recall1"]
        assert FACT in calls_and_results(by_query)[1]["call_recall2"]


# --- an internal call beside a client tool call ---------------------------------------------


@over_pairs
async def test_client_call_reaches_the_client_and_the_internal_one_does_not(
    pair: tuple[str, str], stream: bool
) -> None:
    reply = Reply(
        text="Checking.",
        calls=[state_call(PATCH), ScriptedCall("lookup", {"key": "k1"}, id="call_lookup1")],
    )
    async with rigged(pair, stream, Script([reply, reply])) as rig:
        headers = rig.session()
        seen = await rig.call(headers)
        assert seen.calls == [("call_lookup1", "lookup", {"key": "k1"})]
        assert seen.text == "Checking." and seen.stop == "tool_use"
        assert holds(await rig.state(headers), PATCH)
        assert len(rig.upstream.requests) == 1
        raw = await rig.raw(rig.session())
        assert b"call_lookup1" in raw and b"skill_state" not in raw
        assert len(rig.upstream.requests) == 2


# --- a rejected patch -----------------------------------------------------------------------


@over_pairs
async def test_invalid_patch_is_rejected_in_the_tool_result(
    pair: tuple[str, str], stream: bool
) -> None:
    bad = {"objective": 5, "findings": {"a": "b"}}
    script = Script([Reply(calls=[state_call(bad)]), Reply(text="Noted.")])
    async with rigged(pair, stream, script) as rig:
        headers = rig.session()
        seen = await rig.call(headers)
        assert seen.text == "Noted." and seen.calls == []
        result = calls_and_results(rig.upstream.requests[1])[1]["call_state1"]
        assert "rejected" in result and "unchanged" in result
        state = await rig.state(headers)
        assert "objective" not in state and "findings" not in state


@over_pairs
async def test_a_rejected_patch_is_reported_to_the_client_and_the_ledger(
    pair: tuple[str, str], stream: bool
) -> None:
    """JSON replies say it in ``x-skillstate-state``; a stream's headers leave before the
    rounds, so the verdict reaches the Exchange (the ledger) only."""
    bad = {"objective": 5}
    good = {"objective": "x"}
    script = Script(
        [
            Reply(calls=[state_call(bad)]),
            Reply(calls=[state_call(good, "call_state2")]),
            Reply(text="Noted."),
        ]
    )
    exchanges: list[Exchange] = []
    async with rigged(pair, stream, script) as rig:
        rig.gateway.context.observers.append(exchanges.append)
        client, _ = pair
        headers = rig.session()
        async with aiohttp.ClientSession() as session:
            body = rig.body()
            async with session.post(
                rig.gateway.url + DRIVERS[client].path, json=body, headers=headers
            ) as reply:
                await reply.read()
                verdict = reply.headers.get("x-skillstate-state")
        assert holds(await rig.state(headers), good)
    if stream:
        assert verdict is None
    else:
        assert verdict is not None and verdict.startswith("rejected; reason=")
    assert exchanges and (exchanges[0].note or "").startswith("rejected; reason=")


# --- bounded rounds -------------------------------------------------------------------------


def _forever(request: RecordedRequest) -> Reply:
    n = request.index
    patch = {"findings": {f"r{n}": "seen"}}
    return Reply(text=f"Round {n}. ", calls=[state_call(patch, f"call_state{n}")])


@over_pairs
async def test_a_model_that_patches_forever_stops_after_the_bound(
    pair: tuple[str, str], stream: bool
) -> None:
    async with rigged(pair, stream, _forever) as rig:
        bound = rig.engine.config.max_internal_rounds
        headers = rig.session()
        seen = await rig.call(headers)
        assert len(rig.upstream.requests) == bound + 1
        assert seen.calls == [] and seen.stop == "end_turn"
        rounds = [f"Round {n}." for n in range(bound + 1)]
        assert re.findall(r"Round \d+\.", seen.text) == rounds
        findings = (await rig.state(headers))["findings"]
        assert sorted(findings) == sorted(f"r{n}" for n in range(bound + 1))


# --- text before an internal call streams at once -------------------------------------------


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
async def test_text_before_an_internal_call_reaches_the_client_before_round_two(
    pair: tuple[str, str],
) -> None:
    early = asyncio.Event()
    at_round_two: list[bool] = []

    def policy(request: RecordedRequest) -> Reply:
        if request.index == 0:
            # Slow events after the text: the call and the finish take a while to arrive.
            return Reply(text="Early words.", calls=[state_call(PATCH)], chunk_delay=0.05)
        at_round_two.append(early.is_set())
        return Reply(text="Late words.")

    async with rigged(pair, True, policy) as rig:
        received = b""
        async for chunk in rig.driver.chunks(rig.gateway.url, rig.body(), rig.session()):
            received += chunk
            if b"Early" in received:
                early.set()
        assert at_round_two == [True]
        assert b"Late" in received and b"skill_state" not in received


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
async def test_a_client_that_leaves_mid_continuation_stops_the_upstream_round(
    pair: tuple[str, str],
) -> None:
    """Round two is the gateway's own request, but the client is who it serves: when the client
    goes away, the continuation upstream is dropped too, and round one's patch stays."""
    second = asyncio.Event()
    never = asyncio.Event()

    def policy(request: RecordedRequest) -> Reply:
        if request.index == 0:
            return Reply(text="Early words.", calls=[state_call(PATCH)])
        second.set()
        return Reply(text="Never finished.", hold=never)

    async with rigged(pair, True, policy) as rig:
        headers = rig.session()
        received = b""
        url = rig.gateway.url + rig.driver.path
        async with asyncio.timeout(10):
            async with (
                aiohttp.ClientSession() as session,
                session.post(url, json=rig.body(), headers=headers) as reply,
            ):
                while b"Early" not in received:
                    received += await reply.content.readany()
                await second.wait()
            await rig.upstream.disconnected.wait()
        assert rig.upstream.cancelled == 1
        assert holds(await rig.state(headers), PATCH)
        assert b"Never" not in received


async def test_chat_stream_usage_is_asked_upstream_and_sent_only_when_the_client_asked() -> None:
    """The gateway needs every round's usage to sum it, so it always asks a Chat upstream for
    it; the client gets the usage chunk only when it asked for one."""
    exchanges: list[Exchange] = []
    script = Script(_hidden_round_script())
    async with rigged(("openai-chat", "openai-chat"), True, script) as rig:
        rig.gateway.context.observers.append(exchanges.append)
        body = rig.body()
        del body["stream_options"]
        raw = await rig.raw(rig.session(), body)
        for sent in rig.upstream.requests:
            assert sent.json["stream_options"] == {"include_usage": True}
        assert b'"usage"' not in raw and b"All" in raw
    [exchange] = exchanges
    assert exchange.response is not None
    assert (exchange.response.usage.input, exchange.response.usage.output) == (230, 16)


# --- paper mode -----------------------------------------------------------------------------

ENVELOPE = '```json\n{"state_patch": {"objective": "add numbers"}, "action": "answer 4"}\n```'
PAPER = {"x-skillstate-mode": "paper"}


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
async def test_paper_reply_that_is_no_envelope_is_retried_with_a_note(
    pair: tuple[str, str],
) -> None:
    async with rigged(pair, False, lambda r: Reply(text="prose")) as rig:
        retries = rig.engine.config.paper_retries
        replies = [Reply(text=f"Just prose {n}.") for n in range(retries)] + [Reply(text=ENVELOPE)]
        rig.upstream.policy = Script(replies)
        headers = rig.session(**PAPER)
        seen = await rig.call(headers)
        assert seen.text == "answer 4"  # the envelope's action: the envelope stays upstream
        assert len(rig.upstream.requests) == retries + 1
        for retry in rig.upstream.requests[1:]:
            assert b"Your last reply could not be used" in retry.body
        assert (await rig.state(headers))["objective"] == "add numbers"


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
async def test_paper_retries_are_bounded(pair: tuple[str, str]) -> None:
    async with rigged(pair, False, lambda r: Reply(text=f"Prose {r.index}.")) as rig:
        retries = rig.engine.config.paper_retries
        headers = rig.session(**PAPER)
        seen = await rig.call(headers)
        assert len(rig.upstream.requests) == retries + 1
        assert seen.text == f"Prose {retries}."
        assert "objective" not in await rig.state(headers)


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
async def test_paper_stream_commits_the_envelope_before_its_last_event(
    pair: tuple[str, str],
) -> None:
    """A paper-mode loop sends its next step as soon as the stream ends: Σ must hold the patch
    by the time the client has the last event."""
    async with rigged(pair, True, Script([Reply(text=ENVELOPE)])) as rig:
        headers = rig.session(**PAPER)
        received, at_end = b"", None
        async for chunk in rig.driver.chunks(rig.gateway.url, rig.body(), headers):
            received += chunk
            if at_end is None and rig.driver.terminal in received:
                at_end = await rig.state(headers)
        assert at_end is not None and at_end.get("objective") == "add numbers"


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
async def test_paper_stream_is_never_retried(pair: tuple[str, str]) -> None:
    async with rigged(pair, True, Script([Reply(text="Just prose.")])) as rig:
        headers = rig.session(**PAPER)
        assert (await rig.call(headers)).text == "Just prose."
        assert len(rig.upstream.requests) == 1
        assert "objective" not in await rig.state(headers)
