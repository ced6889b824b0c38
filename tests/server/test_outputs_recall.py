"""The outputs lane through the gateway, on every wire, JSON and stream: once the state lane
offers ``recall`` (here: a collapse asked for), a bulky tool output goes upstream as a view
with its ref, and everything of it comes back exactly through ``recall``, by ref a page at a
time and by query; the client sees none of the gateway's rounds."""

from __future__ import annotations

import re
from typing import Any

import aiohttp
import pytest
from tool_loops import ROUTES, tool_loop

from skillstate.testing import RecordedRequest, Reply, ScriptedCall, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

NEEDLE = "cache key ZEBRA-777-needle"


WORDS = ("orders", "carts", "prices", "invoices", "refunds", "coupons", "batches")


def build_log() -> str:
    """Lines that differ from their neighbours (no run to fold), so a view must elide most."""
    lines = [f"[{n:05d}] INFO handled {WORDS[n % 7]} for shard {n % 13}" for n in range(2_000)]
    lines[777] = f"[00777] INFO handled {NEEDLE}"
    lines[1_900] = "[01900] ERROR src/app/payments.py:88: KeyError: 'amount'"
    return "\n".join(lines)


def body(wire: str, stream: bool) -> dict[str, Any]:
    """A short tool loop: three small steps, then the build's whole log."""
    outputs = [("call_a", "value a"), ("call_b", "value b"), ("call_c", "value c")]
    outputs.append(("call_make", build_log()))
    return tool_loop(wire, stream, "Build the project and find the cache key.", outputs)


def policy(request: RecordedRequest) -> Reply:
    """Read the view's ref, recall page two by ref, then the needle by query, then answer (a
    request before the view, the collapse's handover round, gets a plain reply)."""
    text = request.body.decode()
    if "call_r2" in text:
        return Reply(text="The cache key is ZEBRA-777-needle.")
    if "call_r1" in text:
        return Reply(calls=[ScriptedCall("recall", {"query": "ZEBRA-777"}, id="call_r2")])
    found = re.search(r"skillstate view of a log[^\]]*archived as (ar_[0-9a-f]+)", text)
    if found is None:
        return Reply(text="Noted.")
    return Reply(calls=[ScriptedCall("recall", {"ref": found[1], "offset": 16_000}, id="call_r1")])


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_a_compacted_output_is_recalled_exactly(wire: str, stream: bool) -> None:
    session = f"outputs-{wire}-{stream}"
    headers = {"x-skillstate-session": session, "x-skillstate-mode": "hybrid"}
    settings = {
        "lanes": "compaction,state,outputs",
        "collapse": {"min_turns": 2, "keep_recent_turns": 2},
    }
    async with (
        ScriptedUpstream(policy) as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as http,
    ):
        assert gw.context.engine is not None
        await gw.context.engine.request_collapse(session)
        async with http.post(gw.url + ROUTES[wire], json=body(wire, stream), headers=headers) as r:
            assert r.status == 200, await r.text()
            said = await r.text()
            lanes = r.headers.get("x-skillstate-lanes", "")
        first, by_ref, by_query = up.requests[-3:]
        assert NEEDLE.encode() not in first.body  # the log went as its view
        assert b"KeyError" in first.body  # with its error line
        assert "outputs=-" in lanes
        # Page two of the archived span: the log from about character 16,000 (line 400) on.
        line = build_log().splitlines()[600]
        assert line.encode() not in first.body and line.encode() in by_ref.body
        assert NEEDLE in by_query.body.decode()
        assert "ZEBRA-777-needle" in said and "call_r1" not in said and "recall" not in said
