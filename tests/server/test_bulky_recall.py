"""A bulky tool output compacted as soon as it pays (``state.bulky``), through the gateway on
every wire, JSON and stream: a session passed through before its first boundary is offered
``recall`` on the request that adds a log too long to re-read on every later request, the
outputs lane sends that log as its view in that same request, the model gets all of it back
exactly through ``recall``, and every later request offers ``recall`` and sends the same view
(the provider's prefix cache keeps hitting). A request that adds the log to a session the
express path relays undecoded is left to the full path, which prices it."""

from __future__ import annotations

import json
import re
from typing import Any

import aiohttp
import pytest
from test_outputs_recall import NEEDLE, build_log, policy
from tool_loops import ROUTES, tool_loop

from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for

TASK = "Build the project and find the cache key."
SMALL = [("call_a", "value a")]
BULKY = [*SMALL, ("call_make", build_log())]
AFTER = [*BULKY, ("call_d", "done")]
AFTER_BYTES = json.dumps(tool_loop("chat", False, TASK, AFTER)).encode()


def _offers_recall(body: bytes) -> bool:
    return b'"name":"recall"' in body.replace(b'": "', b'":"')


def _view(body: bytes) -> bytes:
    """The view's bytes from its archive ref to the end of the JSON string it is in."""
    at = body.index(b"archived as ar_")
    end = re.compile(rb'(?<!\\)"').search(body, at)
    assert end is not None
    return body[at : end.start()]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_a_bulky_output_is_compacted_as_it_arrives(wire: str, stream: bool) -> None:
    session = f"bulky-{wire}-{stream}"
    headers = {"x-skillstate-session": session, "x-skillstate-mode": "hybrid"}
    settings = {"lanes": "compaction,state,outputs"}
    async with (
        ScriptedUpstream(policy) as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as http,
    ):
        url = gw.url + ROUTES[wire]

        async def send(outputs: list[tuple[str, str]]) -> tuple[str, str]:
            body: dict[str, Any] = tool_loop(wire, stream, TASK, outputs)
            async with http.post(url, json=body, headers=headers) as reply:
                assert reply.status == 200, await reply.text()
                return await reply.text(), reply.headers.get("x-skillstate-lanes", "")

        await send(SMALL)
        assert len(up.requests) == 1 and not _offers_recall(up.requests[0].body)
        said, lanes = await send(BULKY)
        arrived, by_ref, by_query = up.requests[1:]
        assert _offers_recall(arrived.body) and "outputs=-" in lanes
        assert NEEDLE.encode() not in arrived.body and b"KeyError" in arrived.body
        line = build_log().splitlines()[600]
        assert line.encode() not in arrived.body and line.encode() in by_ref.body
        assert NEEDLE in by_query.body.decode()
        assert "ZEBRA-777-needle" in said and "recall" not in said
        sent = len(up.requests)
        await send(AFTER)
        later = up.requests[sent]  # then the model recalls again, as above
        assert _offers_recall(later.body) and NEEDLE.encode() not in later.body
        assert _view(later.body) == _view(arrived.body)
        tail = json.dumps(build_log()[-2_000:])[1:-1].encode()  # as a JSON string holds it
        assert tail in AFTER_BYTES and not any(tail in r.body for r in up.requests)
