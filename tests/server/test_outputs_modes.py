"""The outputs lane on the paths besides a bulky output in hybrid mode, on every wire, JSON and
stream: at an epoch boundary the shorter outputs of the turns it kept go as views (all but the
newest), the same bytes on the epoch's later requests; in paper mode the observation's bulky
output goes as a view; and in both, ``recall`` gives the output back exactly."""

from __future__ import annotations

import json
import re

import aiohttp
import pytest
from tool_loops import ROUTES, tool_loop

from skillstate.testing import RecordedRequest, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.session_view import tool_names

VIEW = re.compile(r"skillstate view of a log[^\]]*archived as (ar_[0-9a-f]+)")
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
WIRES = pytest.mark.parametrize("wire", sorted(ROUTES))


WORDS = ("orders", "carts", "prices", "invoices", "refunds", "coupons", "batches")


def step_log(step: int, lines: int = 160) -> str:
    """A log of about 7,000 characters per 160 lines, with the step's needle in its middle."""
    out = [
        f"[{n:04d}] INFO step {step} built {WORDS[n % 7]} for shard {n % 13}" for n in range(lines)
    ]
    out[lines // 2] = f"[{lines // 2:04d}] INFO the cache key is {SPOKEN[step]} giraffe"
    out[-10] = f"[{lines - 10:04d}] ERROR src/app/step{step}.py:7: ValueError: bad input"
    return "\n".join(out)


SPOKEN = ("zero", "one", "two", "three", "four", "five", "six", "seven")
"""The needles are words: a view's identifier sidecar would keep one with digits."""


def needle(step: int) -> bytes:
    return f"is {SPOKEN[step]} giraffe".encode()


def recalling(done: str) -> object:
    """A model that reads the first view's ref back through ``recall``, then says ``done``."""

    def policy(request: RecordedRequest) -> Reply:
        text = request.body.decode()
        if "call_r1" in text:
            return Reply(text=done)
        found = VIEW.search(text)
        if found is None:
            return Reply(text=done)
        return Reply(calls=[ScriptedCall("recall", {"ref": found[1]}, id="call_r1")])

    return policy


def viewed(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    """The requests holding a view, but the rounds that recall it."""
    return [r for r in requests if VIEW.search(r.body.decode()) and b"call_r1" not in r.body]


def recalled(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in requests if b"call_r1" in r.body]


@STREAMS
@WIRES
async def test_at_a_boundary_older_kept_outputs_go_as_views_the_same_on_later_requests(
    wire: str, stream: bool
) -> None:
    session = f"boundary-{wire}-{stream}"
    headers = {"x-skillstate-session": session, "x-skillstate-mode": "hybrid"}
    settings = {
        "lanes": "compaction,state,outputs",
        "collapse": {"min_turns": 2, "keep_recent_turns": 3},
    }
    steps = [(f"call_{n}", step_log(n)) for n in range(5)]
    route = ROUTES[wire]
    async with (
        ScriptedUpstream(recalling("Done.")) as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as http,
    ):
        assert gw.context.engine is not None
        await gw.context.engine.request_collapse(session)
        asked = tool_loop(wire, stream, "Build every step.", steps)
        async with http.post(gw.url + route, json=asked, headers=headers) as r:
            assert r.status == 200, await r.text()
            assert "Done." in await r.text()
            assert "outputs=-" in r.headers.get("x-skillstate-lanes", "")
        (boundary,) = viewed(up.requests)
        (by_ref,) = recalled(up.requests)
        # Steps 0 and 1 are in Σ; step 2 is the oldest kept turn: a view; 3 and 4 whole.
        assert [needle(n) in boundary.body for n in range(5)] == [0, 0, 0, 1, 1]
        assert b"ValueError" in boundary.body  # the view keeps the error line
        assert needle(2) in by_ref.body  # the exact output, from the archive
        assert step_log(2).splitlines()[120].encode() in by_ref.body

        steps.append(("call_5", step_log(5)))  # the epoch's next step
        seen = len(up.requests)
        asked = tool_loop(wire, stream, "Build every step.", steps)
        async with http.post(gw.url + route, json=asked, headers=headers) as r:
            assert r.status == 200, await r.text()
        (later,) = viewed(up.requests[seen:])
        assert [needle(n) in later.body for n in range(6)] == [0, 0, 0, 1, 1, 1]
        assert _view_of_step_2(later) == _view_of_step_2(boundary)  # the same bytes


def _view_of_step_2(request: RecordedRequest) -> bytes:
    """The upstream body from the view of step 2 up to step 3's needle."""
    body = request.body
    start = body.index(b"[skillstate view of a log")
    return body[start : body.index(needle(3))]


def envelope(action: str) -> str:
    return json.dumps({"state_patch": {"objective": "find the cache key"}, "action": action})


@STREAMS
@WIRES
async def test_in_paper_mode_the_observations_bulky_output_goes_as_a_view(
    wire: str, stream: bool
) -> None:
    session = f"paper-{wire}-{stream}"
    headers = {"x-skillstate-session": session, "x-skillstate-mode": "paper"}
    settings = {"lanes": "compaction,state,outputs"}
    steps = [("call_0", "value a"), ("call_big", step_log(7, lines=1_200))]
    async with (
        ScriptedUpstream(recalling(envelope("The key is seven giraffe."))) as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as http,
    ):
        asked = tool_loop(wire, stream, "Find the cache key.", steps)
        async with http.post(gw.url + ROUTES[wire], json=asked, headers=headers) as r:
            assert r.status == 200, await r.text()
            said = await r.text()
            assert "outputs=-" in r.headers.get("x-skillstate-lanes", "")
        (first,) = viewed(up.requests)
        assert needle(7) not in first.body
        assert b"ValueError" in first.body
        (by_ref,) = recalled(up.requests)
        elided = step_log(7, lines=1_200).splitlines()[300].encode()  # in its first page
        assert elided not in first.body and elided in by_ref.body
        assert "The key is seven giraffe." in said and "call_r1" not in said


@STREAMS
@WIRES
async def test_in_paper_mode_recall_is_offered_from_the_first_bulky_output_on(
    wire: str, stream: bool
) -> None:
    """Before any observation holds an output the lane would view, the archive has nothing to
    fetch and ``recall``'s definition would only weigh on every request: it is not offered.
    From the request whose observation holds one, it is, and on every request after it (the
    prefix stays the same)."""
    headers = {"x-skillstate-session": f"paper-offer-{wire}-{stream}", "x-skillstate-mode": "paper"}
    settings = {"lanes": "compaction,state,outputs"}
    steps = [("call_0", "value a")]
    outputs = [None, step_log(7, lines=1_200), "value c"]
    offered = []
    async with (
        ScriptedUpstream(lambda _: Reply(text=envelope("Next."))) as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as http,
    ):
        for n, output in enumerate(outputs):
            if output is not None:
                steps.append((f"call_{n}", output))
            asked = tool_loop(wire, stream, "Find the cache key.", steps)
            seen = len(up.requests)
            async with http.post(gw.url + ROUTES[wire], json=asked, headers=headers) as r:
                assert r.status == 200, await r.text()
            (sent,) = up.requests[seen:]
            offered.append("recall" in tool_names(sent))
    assert offered == [False, True, True]
