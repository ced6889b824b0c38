"""The cache verdict of a request relayed as bytes (the express path): told without decoding
where the cause is plain (``hit``, ``first``, ``expired``, ``unmarked``), else from the two
requests decoded (``short``, ``client-head``, ``client-history``, ``provider``); never a
``gateway-*`` or ``boundary`` verdict (the bytes are the client's). And the rows that are not
the client's round (the gateway's own rounds) or whose provider reported nothing: every row
has a verdict."""

from __future__ import annotations

import dataclasses

import pytest
from test_passthrough_rows import _as_sent, _exchange, _price, _relayed, _request

from skillstate.conversation import Message, Request, Text, Usage, Wire
from skillstate.economics import tokenizer
from skillstate.economics.exchange import Relayed
from skillstate.economics.ledger import Ledger, Recorder
from skillstate.economics.ledger.relayed import holds_all
from skillstate.economics.metered import Metered
from skillstate.protocols.tails import json_reply
from skillstate.support import jsonio

WIRES = pytest.mark.parametrize("wire", [Wire.CHAT, Wire.MESSAGES], ids=["chat", "messages"])


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


async def _recorder(clock: Clock) -> Recorder:
    return Recorder(await Ledger.memory(), _price, clock=clock)


def _verdict(recorder: Recorder, request: Request, cached: int = 0) -> str:
    usage = Usage(input=tokenizer.count_request(request), cached_input=cached, output=9)
    (row,) = recorder.rows(_relayed(request, usage))
    return row.cache_verdict


def _edited(request: Request) -> Request:
    """``request`` with its first message's words changed (a host's rewrite of history)."""
    first = request.messages[0]
    edited = dataclasses.replace(first, parts=[Text("Start over. " + "other " * 1_200)])
    return dataclasses.replace(request, messages=[edited, *request.messages[1:]])


@WIRES
async def test_plain_causes_are_told_without_decoding(wire: Wire) -> None:
    clock = Clock()
    recorder = await _recorder(clock)
    assert _verdict(recorder, _as_sent(_request(3, wire))) == "first"
    clock.now += 30
    assert _verdict(recorder, _as_sent(_request(5, wire)), cached=4_096) == "hit"
    clock.now += 11 * 60  # past both caches' lifetimes
    assert _verdict(recorder, _as_sent(_request(7, wire))) == "expired"


@WIRES
async def test_a_miss_the_plain_causes_do_not_explain_is_told_from_the_two_requests(
    wire: Wire,
) -> None:
    clock = Clock()
    recorder = await _recorder(clock)
    _verdict(recorder, _as_sent(_request(3, wire)))
    clock.now += 30
    assert _verdict(recorder, _as_sent(_request(5, wire))) == "provider"  # appended, not served
    clock.now += 30
    assert _verdict(recorder, _as_sent(_edited(_request(7, wire)))) == "client-history"
    clock.now += 30
    changed = dataclasses.replace(_request(9, wire), system=[Text("Another prompt. " * 300)])
    assert _verdict(recorder, _as_sent(changed)) == "client-head"


async def test_a_short_session_is_told_short() -> None:
    clock = Clock()
    recorder = await _recorder(clock)
    small = Request(model="m", messages=[Message("user", [Text("hi")])], source=Wire.CHAT)
    _verdict(recorder, small)
    clock.now += 5
    longer = dataclasses.replace(
        small, messages=[*small.messages, Message("assistant", [Text("hello")])]
    )
    assert _verdict(recorder, longer) == "short"


async def test_breakpoints_the_client_never_set_are_told_unmarked() -> None:
    clock = Clock()
    recorder = await _recorder(clock)
    unmarked = _as_sent(_request(3, Wire.CHAT))
    bare = dataclasses.replace(unmarked, source=Wire.MESSAGES)
    _verdict(recorder, bare)
    clock.now += 5
    assert _verdict(recorder, dataclasses.replace(bare, messages=bare.messages[:3])) == "unmarked"


async def test_after_a_decoded_request_the_relayed_one_is_compared_with_it() -> None:
    clock = Clock()
    recorder = await _recorder(clock)
    opening = _as_sent(_request(3, Wire.CHAT))
    recorder.rows(_exchange(opening, Usage(input=tokenizer.count_request(opening), output=9)))
    clock.now += 30
    assert _verdict(recorder, _as_sent(_request(5, Wire.CHAT))) == "provider"


async def test_a_reply_without_usage_is_told_unreported() -> None:
    recorder = await _recorder(Clock())
    body = jsonio.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    reply = {"model": "m", "choices": [{"message": {"role": "assistant", "content": "yo"}}]}
    relayed = Relayed(body, json_reply(Wire.CHAT, jsonio.dumps(reply)))
    exchange = _exchange(None, None, metered=[], model="m", relayed=relayed)  # type: ignore[arg-type]
    (row,) = recorder.rows(exchange)
    assert row.estimated and row.cache_verdict == "unreported"


# All of the previous request held, told from the bytes ---------------------------------------


def _body(messages: list[dict[str, str]], *, tools_first: bool = False, **extra: object) -> bytes:
    tools = [{"type": "function", "function": {"name": "run", "parameters": {}}}]
    body = (
        {"tools": tools, "model": "m", "messages": messages}
        if tools_first
        else {"model": "m", "messages": messages, "tools": tools}
    )
    return jsonio.dumps({**body, **extra})


TURNS_OF = [
    {"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n}"} for n in range(6)
]


@pytest.mark.parametrize("tools_first", [False, True], ids=["tools-after", "tools-before"])
def test_holds_all_tells_a_history_that_only_grew(tools_first: bool) -> None:
    before = _body(TURNS_OF[:3], tools_first=tools_first)
    assert holds_all(before, _body(TURNS_OF, tools_first=tools_first), Wire.CHAT)
    assert holds_all(before, _body(TURNS_OF[:4], tools_first=tools_first), Wire.CHAT)
    assert holds_all(before, before, Wire.CHAT)  # the same again
    assert not holds_all(_body(TURNS_OF), before, Wire.CHAT)  # a rewind


def test_holds_all_is_false_where_anything_else_changed() -> None:
    before = _body(TURNS_OF[:3])
    edited = [{**TURNS_OF[0], "content": "turn zero"}, *TURNS_OF[1:]]
    assert not holds_all(before, _body(edited), Wire.CHAT)
    assert not holds_all(before, _body(TURNS_OF, temperature=0.5), Wire.CHAT)
    assert not holds_all(before, _body(TURNS_OF).replace(b'"run"', b'"ran"'), Wire.CHAT)
    assert not holds_all(before, _body(TURNS_OF, tools_first=True), Wire.CHAT)  # keys moved
    assert not holds_all(b"{}", _body(TURNS_OF), Wire.CHAT)


def test_holds_all_reads_the_responses_history_key() -> None:
    before = jsonio.dumps({"model": "m", "input": TURNS_OF[:2]})
    after = jsonio.dumps({"model": "m", "input": TURNS_OF})
    assert holds_all(before, after, Wire.RESPONSES) and not holds_all(before, after, Wire.CHAT)


# Rows besides the client's round -------------------------------------------------------------


@pytest.mark.parametrize(
    ("cached", "tokens", "told"),
    [(2_048, 3_000, "hit"), (0, 3_000, "provider"), (0, 600, "short")],
)
async def test_the_gateways_own_round_is_told_by_its_own_usage(
    cached: int, tokens: int, told: str
) -> None:
    """A continuation after the gateway answered its own tool repeats the request it follows
    and adds to it: a hit, or a miss the provider's (or below its minimum)."""
    recorder = await _recorder(Clock())
    request = _as_sent(_request(3, Wire.CHAT))
    rounds = [
        Metered(Usage(input=tokenizer.count_request(request), output=9), request),
        Metered(Usage(input=tokens, cached_input=cached, output=9), request),
    ]
    exchange = _exchange(request, None, metered=rounds, causes=["", "state"])
    first, continued = recorder.rows(exchange)
    assert first.cache_verdict == "first" and continued.cache_verdict == told


async def test_a_call_that_failed_is_told_unreported() -> None:
    recorder = await _recorder(Clock())
    request = _as_sent(_request(3, Wire.CHAT))
    (row,) = recorder.rows(_exchange(request, None, metered=[], status=502))
    assert row.cache_verdict == "unreported" and row.input == 0
