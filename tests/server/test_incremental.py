"""Issue 11's complexity guard: in an append-only session, what the gateway decodes and counts
per request does not grow with the history (the time is the benchmarks' business,
``python -m skillstate.bench.history``; this counts the work)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from skillstate.bench.history import History
from skillstate.economics import tokenizer
from skillstate.protocols.openai_chat import messages as chat_messages
from skillstate.protocols.openai_responses import messages as responses_messages
from skillstate.state import epoch_record
from skillstate.state import turns as turns_module
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

TURNS = 60
LATE = 36
"""From here on the history is long enough to be remembered (``SessionMemos.min_bytes``,
``PrefixMemo.min_messages``): a short one is computed whole, cheaply."""


SEGMENT_TURNS = 70
SEGMENT_LATE = 50
"""``History``'s turns are about 2.8 KB: from here on its body is over ``SessionMemos.min_bytes``
and its messages over ``PrefixMemo.min_messages``."""


def body(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You read files."},
        {"role": "user", "content": "Read every stage."},
    ]
    for n in range(turns):
        call = {"id": f"call_{n}", "type": "function",
                "function": {"name": "read_file", "arguments": f'{{"n": {n}}}'}}  # fmt: skip
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append(
            {"role": "tool", "tool_call_id": f"call_{n}", "content": f"stage {n} " * 600}
        )
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    return {"model": "m", "messages": messages, "tools": tools}


@pytest.mark.parametrize("mode", ["off", "hybrid"])
async def test_per_request_work_does_not_grow_with_the_history(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[int] = []
    real_decode = chat_messages.decode_message
    monkeypatch.setattr(
        chat_messages, "decode_message", lambda v, p: decoded.append(1) or real_decode(v, p)
    )
    counted: list[int] = []
    real_counted = tokenizer._counted
    monkeypatch.setattr(tokenizer, "_counted", lambda m: counted.append(1) or real_counted(m))
    hashed: list[int] = []
    real_pieces = epoch_record._pieces
    monkeypatch.setattr(epoch_record, "_pieces", lambda p: hashed.append(1) or real_pieces(p))
    headers = {"x-skillstate-session": f"append-{mode}", "x-skillstate-mode": mode}
    work: list[tuple[int, int, int]] = []
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url, settings={"collapse": {"min_turns": 4}}) as gw,
        aiohttp.ClientSession() as http,
    ):
        for turns in range(1, TURNS + 1):
            decoded.clear()
            counted.clear()
            hashed.clear()
            url = gw.url + "/v1/chat/completions"
            async with http.post(url, json=body(turns), headers=headers) as reply:
                assert reply.status == 200, await reply.text()
            if gw.context.recorder is not None:  # its counting lands in this request's window
                await gw.context.recorder.flush()
            work.append((len(decoded), len(counted), sum(hashed)))
    late = work[LATE:]
    # Decoded: the two new messages of the turn (a re-sent history is the same objects).
    assert max(fresh for fresh, _, _ in late) <= 2, work
    # Counted: the new messages, and what a boundary renders anew (never the history).
    assert max(texts for _, texts, _ in late) <= 8, work
    # Hashed for the epoch check: nothing, or at a boundary the parts it added to the
    # collapsed prefix (ten turns of two one-part messages here), never the prefix again.
    assert max(hashed_now for *_, hashed_now in late) <= 20, work
    assert sum(1 for *_, hashed_now in late if hashed_now) <= len(late) // 4, work


def responses_body(turns: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Read every stage."}]
    for n in range(turns):
        items.append({"type": "reasoning", "id": f"rs_{n}", "summary": []})
        items.append(
            {
                "type": "function_call",
                "call_id": f"call_{n}",
                "name": "read_file",
                "arguments": f'{{"n": {n}}}',
            }
        )
        items.append(
            {"type": "function_call_output", "call_id": f"call_{n}", "output": f"stage {n} " * 600}
        )
    tools = [{"type": "function", "name": "read_file", "parameters": {}}]
    return {"model": "m", "input": items, "tools": tools}


@pytest.mark.parametrize("mode", ["off", "hybrid"])
async def test_a_responses_history_is_decoded_once_too(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This wire's items group into messages (a turn's reasoning and call are one): only the
    new turn's items, and the last message's when it may go on, are decoded again."""
    decoded: list[int] = []
    real_item = responses_messages.decode_item
    monkeypatch.setattr(
        responses_messages, "decode_item", lambda *a: decoded.append(1) or real_item(*a)
    )
    real_other = responses_messages._decode_other
    monkeypatch.setattr(
        responses_messages, "_decode_other", lambda *a: decoded.append(1) or real_other(*a)
    )
    headers = {"x-skillstate-session": f"responses-{mode}", "x-skillstate-mode": mode}
    work: list[int] = []
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url, settings={"collapse": {"min_turns": 4}}) as gw,
        aiohttp.ClientSession() as http,
    ):
        for turns in range(1, TURNS + 1):
            decoded.clear()
            url = gw.url + "/v1/responses"
            async with http.post(url, json=responses_body(turns), headers=headers) as reply:
                assert reply.status == 200, await reply.text()
            work.append(len(decoded))
    assert max(work[LATE:]) <= 4, work  # the output before, and the new turn's three items


ROUTES = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}


@pytest.mark.parametrize("mode", ["off", "hybrid"])
@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_turns_segmented_and_tokens_counted_do_not_grow_with_the_history(
    wire: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On every wire: the messages segmented into turns and the messages counted per request
    stay a few however long the history (a wire whose last message came back as a new object
    each time had its whole history segmented again on every request)."""
    segmented: list[int] = []
    real_segment = turns_module._segment

    def segment(messages: Any, counter: Any, before: Any, start: int) -> Any:
        segmented.append(len(messages) - start)
        return real_segment(messages, counter, before, start)

    monkeypatch.setattr(turns_module, "_segment", segment)
    counted: list[int] = []
    real_counted = tokenizer._counted
    monkeypatch.setattr(tokenizer, "_counted", lambda m: counted.append(1) or real_counted(m))
    headers = {"x-skillstate-session": f"segmented-{wire}-{mode}", "x-skillstate-mode": mode}
    headers["content-type"] = "application/json"
    history = History(wire)
    work: list[tuple[int, int]] = []
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url, settings={"collapse": {"min_turns": 4}}) as gw,
        aiohttp.ClientSession() as http,
    ):
        for _ in range(SEGMENT_TURNS):
            raw = history.advance()
            segmented.clear()
            counted.clear()
            async with http.post(gw.url + ROUTES[wire], data=raw, headers=headers) as reply:
                assert reply.status == 200, await reply.text()
            if gw.context.recorder is not None:
                await gw.context.recorder.flush()
            work.append((sum(segmented), len(counted)))
    late = work[SEGMENT_LATE:]
    assert max(done for done, _ in late) <= 24, work  # the last turns, not the history
    assert max(texts for _, texts in late) <= 12, work
