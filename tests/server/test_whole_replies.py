"""A reply is whole only when its wire says so; anything short of that reaches the client as a
well-formed error in its own wire, never as a normal end. Over every client wire, translated or
not, JSON and stream, off, hybrid and paper, first round and continuation round: the scripted
upstream cuts its reply short (a stream closed cleanly before its terminal event, a JSON body
cut in half)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rig import Got, over_pairs, over_streams, rigged

from skillstate.protocols.sse import SSEDecoder
from skillstate.testing import Fault, Reply, ScriptedCall
from skillstate.testing.policies import Script

over_all_modes = pytest.mark.parametrize("mode", ["off", "hybrid", "hybrid-relay", "paper"])
"""``hybrid-relay``: hybrid before the session's first boundary, which passes the request
through (the default); ``hybrid``: with the internal tools from the first request, which runs
the round loop."""


def settings_for(mode: str) -> dict[str, Any]:
    return {"collapse": {"passthrough_until_boundary": True}} if mode == "hybrid-relay" else {}


def events(got: Got) -> list[tuple[str | None, str]]:
    decoder = SSEDecoder()
    return [(e.event, e.data) for e in decoder.feed(got.body) + decoder.close()]


def is_wire_error(client: str, got: Got, stream: bool) -> bool:
    """``got`` is a well-formed error of ``client``'s wire: a non-2xx error body, or a stream
    whose last event is the wire's own error event."""
    if got.status >= 400:
        body = json.loads(got.body)
        return isinstance(body, dict) and isinstance(body.get("error"), dict)
    if not stream or got.status != 200:
        return False
    seen = events(got)
    if client == "openai-chat":
        data = [d for _, d in seen if d != "[DONE]"]
        return bool(data) and "error" in json.loads(data[-1]) and seen[-1][1] == "[DONE]"
    if not seen:
        return False
    last: Any = json.loads(seen[-1][1])
    if client == "openai-responses":
        return last.get("type") in ("error", "response.failed")
    return last.get("type") == "error"


def cut_short(client: str, got: Got, stream: bool) -> bool:
    """``got`` is an error of ``client``'s wire that names the failure a truncation (the kind
    ``UpstreamFailure.cut_short`` marks, which a retry policy may try again)."""
    return is_wire_error(client, got, stream) and "cut short" in got.text


def cut() -> Reply:
    return Reply(text="A reply long enough to be cut in the middle of it", fault=Fault.CUT_SHORT)


@over_pairs
@over_streams
@over_all_modes
async def test_a_reply_cut_short_is_an_error_never_a_normal_end(
    pair: tuple[str, str], stream: bool, mode: str
) -> None:
    async with rigged(pair, stream, Script([cut()]), **settings_for(mode)) as rig:
        got = await rig.post(mode.removesuffix("-relay"))
    assert cut_short(pair[0], got, stream), got.text


@over_pairs
@over_streams
async def test_a_continuation_round_cut_short_is_an_error(
    pair: tuple[str, str], stream: bool
) -> None:
    call = ScriptedCall("skill_state", {"patch": {"objective": "x"}}, id="call_s")
    async with rigged(pair, stream, Script([Reply(calls=[call]), cut()])) as rig:
        got = await rig.post("hybrid")
        assert len(rig.upstream.requests) == 2
    assert cut_short(pair[0], got, stream), got.text


@over_pairs
@over_streams
@over_all_modes
async def test_a_cut_before_the_first_byte_is_a_502_cut_short(
    pair: tuple[str, str], stream: bool, mode: str
) -> None:
    """Nothing reached the client yet: the upstream's failure, of the kind a retry policy may
    try again (``UpstreamFailure.cut_short``), in the client's wire. (An empty stream's JSON
    form, asked once to learn why, answers here: no refusal to pass on.)"""
    empty = Reply(text="never sent", fault=Fault.EMPTY)
    script = Script([empty, Reply(text="A diagnosis's answer")])
    async with rigged(pair, stream, script, **settings_for(mode)) as rig:
        got = await rig.post(mode.removesuffix("-relay"))
    assert got.status == 502 and "cut short" in got.text, got.text
    assert is_wire_error(pair[0], got, stream)


@over_pairs
@over_streams
@over_all_modes
async def test_a_reply_empty_before_its_first_byte_is_tried_again(
    pair: tuple[str, str], stream: bool, mode: str
) -> None:
    """Nothing reached the client: an empty 200 (a stream of no events, an empty JSON body)
    is tried again like a 502, and the client gets the whole reply of the next try; the
    ledger's attempts say what each try was."""
    empty = Reply(text="never sent", fault=Fault.EMPTY)
    fine = Reply(text="the-whole-answer")
    settings = {**settings_for(mode), "retries": 2, "retry_max_wait": 0.01}
    async with rigged(pair, stream, Script([empty] + [fine] * 6), **settings) as rig:
        got = await rig.post(mode.removesuffix("-relay"))
        assert len(rig.upstream.requests) >= 2  # paper may go on with rounds of its own
    assert got.status == 200 and "the-whole-answer" in got.text, got.text
    assert rig.exchanges[0].attempts[:2] == [502, 200]
    assert not is_wire_error(pair[0], got, stream)


def ends_once(client: str, got: Got) -> bool:
    """The stream ends once, at its very end: one Chat ``[DONE]``, last (an end marker before
    the error event would end the client's read before it saw the error)."""
    if client != "openai-chat" or got.status != 200:
        return True
    done = [d for _, d in events(got) if d == "[DONE]"]
    return done == ["[DONE]"] and events(got)[-1][1] == "[DONE]"


@over_pairs
@over_all_modes
async def test_a_stream_ended_without_its_finish_is_an_error_never_a_made_up_stop(
    pair: tuple[str, str], mode: str
) -> None:
    """The upstream ends its stream as if whole (Chat: ``[DONE]``) but its finish never came:
    the client gets its wire's error event, before the one end of its stream, never a
    ``stop`` / ``end_turn`` / ``response.completed`` the upstream did not send."""
    unfinished = Reply(text="An answer whose finish never comes", fault=Fault.NO_FINISH)
    async with rigged(pair, True, Script([unfinished]), **settings_for(mode)) as rig:
        got = await rig.post(mode.removesuffix("-relay"))
    assert cut_short(pair[0], got, True), got.text
    assert ends_once(pair[0], got), got.text
    for made_up in ('"finish_reason":"stop"', '"stop_reason":"end_turn"', "response.completed"):
        assert made_up not in got.text.replace(" ", ""), got.text


@over_pairs
@pytest.mark.parametrize("mode", ["off", "hybrid"])
async def test_an_empty_stream_gets_the_refusal_its_json_form_gets(
    pair: tuple[str, str], mode: str
) -> None:
    """A server that answers a stream it cannot serve (a prompt over its context) with an empty
    200 refuses the same request as JSON: the gateway asks that once, for one token, and the
    client gets that refusal in its own wire, not a 502 that says nothing of why."""
    empty = Reply(text="never sent", fault=Fault.EMPTY)
    refusal = Reply.failure(400, "This model's maximum context length is 2048 tokens.")
    async with rigged(pair, True, Script([empty, refusal])) as rig:
        got = await rig.post(mode)
        diagnosis = rig.upstream.requests[1].json
    assert got.status == 400 and "maximum context length" in got.text, got.text
    assert is_wire_error(pair[0], got, True)
    assert isinstance(diagnosis, dict) and diagnosis["stream"] is False
    limits = {k: v for k, v in diagnosis.items() if k.startswith("max_")}
    assert limits and set(limits.values()) == {1}, diagnosis
    assert rig.exchanges[0].attempts == [502, 400]
