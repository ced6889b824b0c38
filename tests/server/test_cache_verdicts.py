"""Every upstream request's cache verdict, through the gateway (``economics.cache_verdict``):
the honest session of ``test_counterfactual_honesty`` (a coding loop of 30 turns, a simulated
provider that bills its wire's prompt cache), on Chat and Messages, JSON and stream. Its
first request is ``first``, the rest hit the cache but where an epoch boundary rewrote the
prefix (``boundary``), and the gateway never breaks the cache otherwise (no ``gateway-*``);
against a provider that caches nothing, they are the ``provider``'s; a client that edits its
first message is told apart (``client-history``). ``/cost`` shows them, per session too."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from test_counterfactual_honesty import PRICES, TURNS, WIRES, _policy

from skillstate.testing import Billing, ScriptedUpstream
from skillstate.testing.gateway import gateway_for


async def _verdicts(
    wire: str,
    *,
    stream: bool = False,
    caching: bool = True,
    edit_at: int | None = None,
    mode: str = "hybrid",
) -> tuple[dict[str, int], dict[str, int]]:
    """The session's /cost totals' verdicts, and its own group's."""
    path, body_of = WIRES[wire]
    async with (
        ScriptedUpstream(_policy, billing=Billing(caching=caching)) as up,
        gateway_for(up.url, settings={"prices": PRICES}) as gw,
        aiohttp.ClientSession() as http,
    ):
        for turn in range(TURNS + 1):
            body: dict[str, Any] = {**body_of(turn), "stream": stream}
            if edit_at is not None and turn >= edit_at:
                body["messages"][-2 * turn - (wire == "chat")]["content"] = "Read them all again."
            if stream and wire == "chat":
                body["stream_options"] = {"include_usage": True}
            headers = {"x-skillstate-session": "verdicts", "x-skillstate-mode": mode}
            async with http.post(gw.url + path, json=body, headers=headers) as reply:
                assert reply.status == 200, await reply.text()
                await reply.read()
        async with http.get(gw.url + "/cost") as reply:
            doc = await reply.json()
    (group,) = [g for g in doc["by_session"] if g["session"] == "verdicts"]
    return doc["totals"]["cache_verdicts"], group["cache_verdicts"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_a_cached_session_hits_but_at_its_first_request_and_its_boundaries(
    wire: str, stream: bool
) -> None:
    totals, session = await _verdicts(wire, stream=stream)
    assert totals == session
    assert totals["first"] == 1 and totals["hit"] >= TURNS - 5
    assert set(totals) <= {"first", "hit", "boundary", "short"}, totals


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_a_provider_that_caches_nothing_is_told(wire: str) -> None:
    totals, _ = await _verdicts(wire, caching=False)
    assert totals["first"] == 1 and totals["provider"] >= TURNS - 5
    assert not any(verdict.startswith("gateway") for verdict in totals), totals


async def test_a_client_that_edits_its_history_is_told() -> None:
    totals, _ = await _verdicts("chat", edit_at=20)
    assert totals["client-history"] == 1, totals


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_a_session_relayed_as_bytes_has_a_verdict_on_every_request(
    wire: str, stream: bool
) -> None:
    """Mode off: every request goes up as its bytes (the express path), never decoded on its
    way; each still gets its verdict."""
    totals, _ = await _verdicts(wire, stream=stream, mode="off")
    assert sum(totals.values()) == TURNS + 1, totals
    assert totals["first"] == 1 and totals["hit"] >= TURNS - 5, totals
    assert set(totals) <= {"first", "hit", "short"}, totals


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_a_session_relayed_as_bytes_tells_the_provider_and_the_client_apart(
    wire: str,
) -> None:
    nothing, _ = await _verdicts(wire, caching=False, mode="off")
    assert nothing["first"] == 1 and nothing["provider"] >= TURNS - 5, nothing
    edited, _ = await _verdicts(wire, edit_at=20, mode="off")
    assert edited["client-history"] == 1, edited
