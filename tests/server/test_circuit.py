"""The circuit breaker through a real gateway: it opens on a failure rate, not on a run of
retries; open, it reroutes to a healthy fallback; with nowhere else to go it sends traffic
anyway, so a partly (or wholly) failing upstream never becomes the gateway's own refusals.
Its state shows in /health and /metrics."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import aiohttp
import pytest
from internal_tools_clients import DRIVERS
from rig import Got, Rig, rigged

from skillstate.economics.exchange import Exchange
from skillstate.testing import Fault, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.policies import Script
from skillstate.testing.recording import RecordedRequest

FAST = {"retry-after-ms": "10"}
CHAT = ("openai-chat", "openai-chat")


def failed(status: int = 500) -> Reply:
    return Reply.failure(status, "down", headers=FAST)


def refused_by_the_gateway(got: Got) -> bool:
    """A 503/529 the gateway made itself (the circuit), not one an upstream sent."""
    return got.status in (503, 529) and "circuit" in got.text


async def metrics(rig: Rig) -> str:
    async with (
        aiohttp.ClientSession() as session,
        session.get(rig.gateway.url + "/metrics") as r,
    ):
        return await r.text()


async def test_it_opens_on_a_failure_rate_not_on_a_run_of_retries() -> None:
    """Three requests each fail twice before their third try succeeds: six failures in a row
    at the upstream (the old breaker opened at five), three successes for the circuit. Then
    three requests that fail whole: 3 of 6 calls, the rate, and the circuit opens."""
    recovered = [failed(), failed(), Reply(text="Third time")]
    spent = [failed(), failed(), failed()]
    script = Script([*recovered * 3, *spent * 3, Reply(text="Still served")])
    settings = {"circuit_min_requests": 6}
    async with rigged(CHAT, False, script, retries=2, **settings) as rig:
        for _ in range(3):
            assert (await rig.post("off")).status == 200
        health = (await rig.health())["upstreams"][0]
        # Not open; degraded (6 of its 9 tries failed), which matters only with a fallback.
        assert health["circuit"] == "degraded"
        window = {"calls": 3, "failed": 0, "tries": 9, "failed_tries": 6, "retry_in_s": 0.0}
        assert health["circuit_window"] == window
        for _ in range(2):
            assert (await rig.post("off")).status == 500
        assert (await rig.health())["upstreams"][0]["circuit"] == "degraded"  # 2 of 5: below
        assert (await rig.post("off")).status == 500
        assert (await rig.health())["upstreams"][0]["circuit"] == "open"
        assert 'skillstate_upstream_circuit{state="open",upstream="default"} 1.0' in (
            await metrics(rig)
        )
        # Open, with nowhere else to go: the request still goes, and is served.
        served = await rig.post("off")
    assert served.status == 200 and "Still served" in served.text
    assert len([r for r in rig.upstream.requests if r.method == "POST"]) == 19


def _fallback_config(tmp_path: Any, primary: str, backup: str) -> str:
    path = tmp_path / "skillstate.toml"
    path.write_text(
        f'[[upstreams]]\nname = "primary"\nbase_url = "{primary}"\n'
        'wire = "openai-chat"\nfallbacks = ["backup"]\n'
        f'[[upstreams]]\nname = "backup"\nbase_url = "{backup}"\nwire = "openai-chat"\n'
        'models = ["none-*"]\n'
    )
    return str(path)


async def test_open_it_reroutes_to_a_healthy_fallback(tmp_path: Any) -> None:
    """Two requests fail on the primary (each served by the fallback after its tries): the
    circuit opens, and the next requests go to the fallback straight away."""
    async with (
        ScriptedUpstream(Script([failed(), failed()])) as primary,
        ScriptedUpstream(Script([Reply(text="Backup") for _ in range(4)])) as backup,
    ):
        config = _fallback_config(tmp_path, primary.url, backup.url)
        exchanges: list[Exchange] = []
        settings = {"circuit_min_requests": 2}
        async with gateway_for(config_path=config, settings=settings) as gw:
            gw.context.observers.append(exchanges.append)
            rig = Rig(primary, gw, DRIVERS["openai-chat"], False, exchanges)
            got = [await rig.post("off") for _ in range(4)]
            health = {up["name"]: up for up in (await rig.health())["upstreams"]}
            shown = await metrics(rig)
        assert len(primary.requests) == 2 + 1  # two calls, and /health's probe of /v1/models
        assert len(backup.requests) == 4 + 1
    assert all(g.status == 200 and "Backup" in g.text for g in got)
    assert [e.upstream for e in exchanges] == ["backup"] * 4
    assert exchanges[0].attempts == [500, 200]
    assert exchanges[2].attempts == [200]  # the primary was not tried
    assert "its circuit is open" in (exchanges[2].note or "")
    assert health["primary"]["circuit"] == "open" and health["backup"]["circuit"] == "closed"
    assert 'skillstate_upstream_circuit{state="open",upstream="primary"} 1.0' in shown
    assert 'skillstate_upstream_circuit{state="closed",upstream="backup"} 1.0' in shown


async def test_an_open_fallback_is_no_reason_to_refuse(tmp_path: Any) -> None:
    """Both upstreams down: both circuits open, and requests still go (to the primary), get
    the upstreams' own errors, and are served as soon as the primary answers again."""
    down = [failed() for _ in range(4)]
    async with (
        ScriptedUpstream(Script([*down, Reply(text="Back")])) as primary,
        ScriptedUpstream(Script(down)) as backup,
    ):
        config = _fallback_config(tmp_path, primary.url, backup.url)
        settings = {"circuit_min_requests": 2}
        async with gateway_for(config_path=config, settings=settings) as gw:
            rig = Rig(primary, gw, DRIVERS["openai-chat"], False)
            got = [await rig.post("off") for _ in range(5)]
    assert [g.status for g in got[:4]] == [500] * 4
    assert not any(refused_by_the_gateway(g) for g in got)
    assert got[4].status == 200 and "Back" in got[4].text


class Flaky:
    """Answers 500 to a share of the calls (seeded), "ok" to the rest."""

    def __init__(self, share: float, seed: int = 7) -> None:
        self.share = share
        self._random = random.Random(seed)
        self.failures = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        if self._random.random() < self.share:
            self.failures += 1
            return failed()
        return Reply(text="Fine")


async def test_a_partly_failing_upstream_without_fallback_is_never_refused() -> None:
    """30% of the upstream's calls fail; with two retries a request fails only when three
    tries in a row do (about 2.7%). Over 80 requests: no refusal of the gateway's own, and
    nearly all served, with a circuit as eager as it can be (2 calls make a volume)."""
    flaky = Flaky(0.3)
    settings = {"circuit_min_requests": 2, "circuit_window_seconds": 60.0}
    async with rigged(CHAT, False, flaky, retries=2, **settings) as rig:
        got = [await rig.post("off") for _ in range(80)]
    statuses = Counter(g.status for g in got)
    assert not any(refused_by_the_gateway(g) for g in got)
    assert statuses[200] >= 72, statuses
    assert set(statuses) <= {200, 500}
    assert flaky.failures > 15  # the upstream did fail, often


async def test_a_wholly_failing_upstream_without_fallback_is_still_called() -> None:
    """All calls fail for a while: the circuit opens, yet every request reaches the upstream
    and gets its own error (never the gateway's 503/529), and the first request after the
    upstream recovers is served (no 30 s of refusals)."""
    down = [failed() for _ in range(10)]
    settings = {"circuit_min_requests": 3}
    async with rigged(CHAT, True, Script([*down, Reply(text="Recovered")]), **settings) as rig:
        got = [await rig.post("off") for _ in range(10)]
        assert (await rig.health())["upstreams"][0]["circuit"] == "open"
        back = await rig.post("off")
    assert [g.status for g in got] == [500] * 10
    assert not any(refused_by_the_gateway(g) for g in got)
    assert back.status == 200 and "Recovered" in back.text


async def test_a_short_429_is_waited_and_is_no_failure_for_the_circuit() -> None:
    wait = {"retry-after": "0.3"}
    script = Script([Reply.failure(429, "slow down", headers=wait), Reply(text="Later")])
    async with rigged(CHAT, False, script, retries=2) as rig:
        got = await rig.post("off")
        health = (await rig.health())["upstreams"][0]
    assert got.status == 200 and "Later" in got.text
    assert rig.exchanges[0].attempts == [429, 200]
    assert health["circuit_window"]["failed"] == 0


async def test_no_retry_starts_past_the_deadline() -> None:
    script = Script([Reply.failure(503, "busy", headers={"retry-after": "0.4"}) for _ in range(3)])
    async with rigged(CHAT, False, script, retries=5, retry_deadline=0.5) as rig:
        got = await rig.post("off")
    assert got.status == 503
    assert rig.exchanges[0].attempts == [503, 503]  # a third try would start after 0.8 s


async def test_a_degraded_upstream_is_passed_over_for_a_healthy_fallback(tmp_path: Any) -> None:
    """The primary fails one try in five; its retries absorb it (no call fails, the circuit
    never opens), but its tries show it: once 5 tries were made, 1 failed (over the 10% reroute
    rate), the next requests go to the healthy fallback straight away."""
    pattern = [failed(), *(Reply(text="Primary") for _ in range(4))]
    async with (
        ScriptedUpstream(Script(pattern * 4)) as primary,
        ScriptedUpstream(Script([Reply(text="Backup") for _ in range(3)])) as backup,
    ):
        config = _fallback_config(tmp_path, primary.url, backup.url)
        exchanges: list[Exchange] = []
        settings = {"circuit_min_requests": 5, "retries": 2}
        async with gateway_for(config_path=config, settings=settings) as gw:
            gw.context.observers.append(exchanges.append)
            rig = Rig(primary, gw, DRIVERS["openai-chat"], False, exchanges)
            got = [await rig.post("off") for _ in range(6)]
            health = {up["name"]: up for up in (await rig.health())["upstreams"]}
            shown = await metrics(rig)
    assert all(g.status == 200 for g in got)
    assert ["Primary" in g.text for g in got] == [True] * 4 + [False] * 2
    assert [e.upstream for e in exchanges] == ["primary"] * 4 + ["backup"] * 2
    assert exchanges[0].attempts == [500, 200]
    assert exchanges[4].attempts == [200]  # the primary was not tried
    assert "its circuit is degraded" in (exchanges[4].note or "")
    assert health["primary"]["circuit"] == "degraded"
    assert health["primary"]["circuit_window"]["failed"] == 0
    assert health["backup"]["circuit"] == "closed"
    assert 'skillstate_upstream_circuit{state="degraded",upstream="primary"} 1.0' in shown


async def test_a_failing_try_moves_the_call_to_a_fallback_once_the_circuit_says_so(
    tmp_path: Any,
) -> None:
    """A call whose upstream became degraded while it was trying is not tried there again:
    its next try is the fallback's."""
    async with (
        ScriptedUpstream(Script([Reply(text="Primary"), failed(), failed()])) as primary,
        ScriptedUpstream(Script([Reply(text="Backup")])) as backup,
    ):
        config = _fallback_config(tmp_path, primary.url, backup.url)
        exchanges: list[Exchange] = []
        settings = {"circuit_min_requests": 2, "retries": 2}
        async with gateway_for(config_path=config, settings=settings) as gw:
            gw.context.observers.append(exchanges.append)
            rig = Rig(primary, gw, DRIVERS["openai-chat"], False, exchanges)
            first, second = [await rig.post("off") for _ in range(2)]
    assert "Primary" in first.text and "Backup" in second.text
    # 1 of 2 tries failed: degraded; the call leaves for the fallback before a second 500.
    assert exchanges[1].attempts == [500, 200] and exchanges[1].upstream == "backup"
    assert len([r for r in primary.requests if r.method == "POST"]) == 2


@pytest.mark.parametrize("fault", [Fault.RESET, Fault.CUT_SHORT])
@pytest.mark.parametrize("mode", ["off", "hybrid"])
async def test_a_stream_broken_after_its_first_byte_is_a_failed_call(
    fault: Fault, mode: str
) -> None:
    """The client had bytes, so the call was not tried again, but its circuit is told it
    failed (a broken stream is no success), once, when the stream ended."""
    broken = Reply(text="A stream long enough to break in its middle", fault=fault)
    script = Script([Reply(text="Whole"), broken])
    async with rigged(CHAT, True, script, retries=2) as rig:
        whole = await rig.post(mode)
        assert (await rig.health())["upstreams"][0]["circuit_window"]["failed"] == 0
        cut = await rig.post(mode)
        window = (await rig.health())["upstreams"][0]["circuit_window"]
    assert whole.status == 200 and '"error"' not in whole.text
    # Relayed, the error comes as an event; the round loop may not have sent a byte yet.
    assert cut.status in (200, 502) and '"error"' in cut.text
    assert (window["calls"], window["failed"]) == (2, 1)
    assert (window["tries"], window["failed_tries"]) == (2, 1)


async def test_the_retry_deadline_counts_from_the_requests_first_try() -> None:
    """Two rounds (the internal tool's call, then the answer), each of whose first try is a
    503 asking 0.4 s: with a 0.5 s deadline, the first round's wait spends most of it, and
    the second round is not tried again (a deadline per round would have let it)."""
    busy = Reply.failure(503, "busy", headers={"retry-after": "0.4"})
    call = ScriptedCall("skill_state", {"patch": {"objective": "x"}}, id="call_s")
    script = Script([busy, Reply(calls=[call]), busy, Reply(text="Done")])
    async with rigged(CHAT, False, script, retries=5, retry_deadline=0.5) as rig:
        got = await rig.post("hybrid")
    assert got.status == 503
    assert rig.exchanges[0].attempts == [503, 200, 503]
