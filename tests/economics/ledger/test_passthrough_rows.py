"""The pass-through estimate on each row (issue 26): a request that went up as the client sent
it is its own pass-through (the estimate is what was recorded, so it saves exactly 0); any
other follows the cache its provider was seen to give, and the row says which."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from skillstate.conversation import CacheMark, Message, Request, Text, Usage, Wire
from skillstate.economics import tokenizer
from skillstate.economics.exchange import LOCAL, Exchange, Relayed
from skillstate.economics.ledger import Ledger, Recorder, Row
from skillstate.economics.ledger.relayed import replies_counted
from skillstate.economics.metered import Metered
from skillstate.protocols import adapter
from skillstate.protocols.tails import json_reply
from skillstate.support import jsonio
from skillstate.testing import chat_bodies, messages_bodies

SYSTEM = [Text("You are a careful coding agent working in a Python repository. " * 40)]


def _request(turns: int, wire: Wire = Wire.CHAT) -> Request:
    """A conversation of ``turns``; on Anthropic's wire with the client's cache breakpoint on
    its last message (as Claude Code sends), on Chat with none (the provider's cache is
    automatic)."""
    mark = CacheMark() if wire is Wire.MESSAGES else None
    messages = [
        Message(
            "user" if n % 2 == 0 else "assistant",
            [Text(f"turn {n} " + "word " * 1_200, cache=mark if n == turns - 1 else None)],
        )
        for n in range(turns)
    ]
    return Request(model="m", messages=messages, source=wire, system=SYSTEM)


def _exchange(request: Request, usage: Usage | None, **changes: Any) -> Exchange:
    fields: dict[str, Any] = {
        "session": "s",
        "session_source": "header",
        "client_wire": request.source if request is not None else Wire.CHAT,
        "upstream_wire": request.source if request is not None else Wire.CHAT,
        "upstream": "default",
        "request": request,
        "response": None,
        "status": 200,
        "streamed": False,
        "forwarded_original": True,
        "elapsed_s": 0.1,
        "metered": [Metered(usage, request, Message("assistant", [Text("ok")]))],
    }
    fields.update(changes)
    return Exchange(**fields)


def _price(model: str, usage: Usage) -> float | None:
    """$3 per million input tokens, $0.30 cached, $15 output; model ``m`` only."""
    if model != "m":
        return None
    plain = usage.input - usage.cached_input - usage.cache_write
    return (3 * plain + 0.3 * usage.cached_input + 15 * usage.output) / 1_000_000


async def _recorder() -> Recorder:
    return Recorder(await Ledger.memory(), _price, clock=lambda: 1_000.0)


def _first(rows: list[Row]) -> Row:
    assert rows[0].round == 0
    return rows[0]


@pytest.mark.parametrize("cached", [0, 4_096], ids=["no-cache", "cache"])
async def test_a_request_sent_as_the_client_sent_it_is_its_own_pass_through(cached: int) -> None:
    recorder = await _recorder()
    for turns in (1, 3, 5, 7):
        request = _request(turns)
        usage = Usage(input=tokenizer.count_request(request) + 11, cached_input=cached, output=9)
        row = _first(recorder.rows(_exchange(request, usage)))
        assert row.estimate_basis == "recorded"
        assert (row.passthrough_input, row.passthrough_cached_input) == (
            row.input,
            row.cached_input,
        )
        assert row.passthrough_cache_write == row.cache_write
        assert row.passthrough_cost_usd == row.cost_usd is not None  # the same float: saves 0


async def test_a_request_the_provider_gave_no_usage_for_is_its_own_pass_through_too() -> None:
    row = _first((await _recorder()).rows(_exchange(_request(3), None)))
    assert row.estimated and row.estimate_basis == "recorded"
    assert row.passthrough_cost_usd == row.cost_usd and row.passthrough_input == row.input


async def test_a_failed_request_estimates_nothing() -> None:
    failed = _exchange(_request(3), None, status=503, metered=[], forwarded_original=False)
    row = _first((await _recorder()).rows(failed))
    assert (row.passthrough_input, row.passthrough_cost_usd) == (0, 0.0)


def _rewritten(request: Request) -> Request:
    """What a lane might send instead: the same conversation, a shorter system prompt."""
    return dataclasses.replace(request, system=[Text("You are a careful coding agent.")])


async def _rewritten_session(cached_share: float) -> list[Row]:
    """Four requests a lane changed, to a provider that serves ``cached_share`` of the
    prefix the sent requests share with the one before."""
    recorder = await _recorder()
    rows = []
    previous = 0
    for turns in (1, 3, 5, 7):
        request = _request(turns)
        sent = _rewritten(request)
        total = tokenizer.count_request(sent)
        usage = Usage(input=total, cached_input=int(previous * cached_share), output=9)
        previous = total
        exchange = _exchange(request, usage, forwarded_original=False, sent=sent)
        rows.append(_first(recorder.rows(exchange)))
    return rows


async def test_a_provider_that_never_caches_is_estimated_without_a_cache() -> None:
    rows = await _rewritten_session(0.0)
    assert [row.estimate_basis for row in rows] == ["automatic", "no-cache", "no-cache", "no-cache"]
    assert all(row.passthrough_cached_input == 0 for row in rows)
    assert all(row.passthrough_input and row.passthrough_input > row.input for row in rows)


async def test_a_provider_that_caches_is_estimated_with_its_cache() -> None:
    rows = await _rewritten_session(1.0)
    assert [row.estimate_basis for row in rows] == ["automatic"] * 4
    assert rows[0].passthrough_cached_input == 0
    assert all((row.passthrough_cached_input or 0) > 1_024 for row in rows[1:])


async def test_a_provider_that_caches_less_is_estimated_by_the_share_it_served() -> None:
    full, half = await _rewritten_session(1.0), await _rewritten_session(0.5)
    assert [row.estimate_basis for row in half[1:]] == ["observed"] * 3
    for whole, part in zip(full[1:], half[1:], strict=True):
        assert part.passthrough_cached_input is not None and whole.passthrough_cached_input
        assert 0.4 < part.passthrough_cached_input / whole.passthrough_cached_input < 0.6


async def test_a_reply_the_gateway_made_itself_keeps_the_saving_of_the_call_it_spared() -> None:
    """Nothing went upstream (host compaction answered from the state): a pass-through would
    have made the call, so the estimate is the rule's, not the recorded $0."""
    local = _exchange(
        _request(3), None, upstream=LOCAL, rounds=0, metered=[], forwarded_original=False
    )
    row = _first((await _recorder()).rows(local))
    assert row.cost_usd == 0.0 and row.estimate_basis == "automatic"
    assert row.passthrough_cost_usd and row.passthrough_cost_usd > 0


def _as_sent(request: Request) -> Request:
    """``request`` as the gateway decodes it from the body a client sends for it."""
    wire = request.source
    body = jsonio.dumps(adapter(wire).encode_request(request))
    return adapter(wire).decode_request(jsonio.loads(body))


def _relayed(request: Request, usage: Usage) -> Exchange:
    """``request`` passed through as its bytes (the express path), its reply's usage in them."""
    wire = request.source
    body = jsonio.dumps(adapter(wire).encode_request(request))
    if wire is Wire.MESSAGES:
        reply = {"model": "m", "content": [], "usage": messages_bodies.usage(usage)}
    else:
        reply = {"model": "m", "choices": [], "usage": chat_bodies.usage(usage)}
    relayed = Relayed(body, json_reply(wire, jsonio.dumps(reply)))
    exchange = _exchange(None, None, metered=[], model="m", relayed=relayed)  # type: ignore[arg-type]
    return dataclasses.replace(exchange, client_wire=wire, upstream_wire=wire)


def test_a_relayed_reply_is_read_from_its_bytes_once_and_only_its_counts_kept() -> None:
    """The recorder and a key's budget both count a relayed reply: its bytes are read the
    first time, and only what they counted is kept on it (not a request decoded to count it:
    a batch of exchanges waiting for the ledger would hold every one)."""
    exchange = _relayed(_as_sent(_request(3, Wire.CHAT)), Usage(input=40, output=9))
    first = replies_counted(exchange)
    assert first == ([(Usage(input=40, output=9), False)], "m")
    assert replies_counted(exchange) is first
    assert exchange.relayed is not None and exchange.relayed.read is first


@pytest.mark.parametrize("wire", [Wire.CHAT, Wire.MESSAGES], ids=["automatic", "breakpoints"])
@pytest.mark.parametrize("first", ["decoded", "relayed"])
async def test_a_request_after_one_relayed_as_bytes_is_estimated_as_after_a_decoded_one(
    first: str, wire: Wire
) -> None:
    """A session's pass-through cache is brought up to a request relayed undecoded when a
    later request of the session is estimated: the later one's estimate is the same as after
    the same first request decoded (here: the prefix it shares is read from the cache), with
    the provider's automatic cache and with the client's own breakpoints."""
    recorder = await _recorder()
    opening = _as_sent(_request(3, wire))
    usage = Usage(input=tokenizer.count_request(opening), output=9)
    kept = _relayed(opening, usage) if first == "relayed" else _exchange(opening, usage)
    row = _first(recorder.rows(kept))
    assert (row.estimate_basis, row.passthrough_input) == ("recorded", usage.input)
    later = _as_sent(_request(5, wire))
    sent = _rewritten(later)
    usage = Usage(input=tokenizer.count_request(sent), cached_input=2_048, output=9)
    after = _first(recorder.rows(_exchange(later, usage, forwarded_original=False, sent=sent)))
    if wire is Wire.CHAT:
        assert after.passthrough_cached_input == 4_096  # the opening, in steps of 1,024
    else:  # the opening up to its breakpoint, to the token
        assert after.passthrough_cached_input and 4_096 < after.passthrough_cached_input < 5_120
    reference = await _recorder()
    reference.rows(_exchange(opening, Usage(input=usage.input, output=9)))
    assert (
        after.passthrough_cached_input
        == _first(
            reference.rows(_exchange(later, usage, forwarded_original=False, sent=sent))
        ).passthrough_cached_input
    )
