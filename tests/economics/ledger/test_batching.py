"""The recorder writes the rows of requests that come close together in one transaction (a
commit costs as much as the rest of a short request's handling), and loses none of them."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from skillstate.economics.ledger import report
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_requests_close_together_share_one_write_and_all_are_recorded(stream: bool) -> None:
    body = {**BODY, "stream": stream}
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as http,
    ):
        recorder = gw.context.recorder
        assert recorder is not None
        ledger = recorder.ledger
        writes: list[int] = []
        real_append = ledger.append_made

        async def append(make):  # type: ignore[no-untyped-def]
            rows = await real_append(make)
            writes.append(len(rows))
            return rows

        async with http.post(gw.url + "/v1/chat/completions", json=body) as reply:
            assert reply.status == 200  # the first, whose row takes the longest
        await recorder.flush()
        ledger.append_made = append  # type: ignore[method-assign]
        for _ in range(6):
            async with http.post(gw.url + "/v1/chat/completions", json=body) as reply:
                assert reply.status == 200
                await reply.read()
            await asyncio.sleep(0.005)  # each alone would be written by now
        await recorder.flush()
        assert sum(writes) == 6
        assert len(writes) <= 3, writes  # a window or two for the six (one each without it)
        totals = (await report(ledger))["totals"]
        assert totals["requests"] == 7
        assert totals["output_tokens"] > 0  # each reply's usage, a stream's too
