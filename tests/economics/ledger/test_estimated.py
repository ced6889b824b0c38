"""A reply whose provider reported no usage (defect 7 of issue 25: llama.cpp's streams) is
counted by the gateway and its row marked estimated, never recorded as 0 tokens for $0; the
provider's figures, where it gave them, stand as they are (``economics.metered``)."""

from __future__ import annotations

from typing import Any

import pytest

from skillstate.conversation import Message, Reasoning, Request, Text, Usage, Wire
from skillstate.economics import tokenizer
from skillstate.economics.exchange import Exchange
from skillstate.economics.ledger import Ledger, Recorder
from skillstate.economics.metered import Metered, counted, total

REQUEST = Request(
    model="m",
    messages=[Message("user", [Text("Read the parser and say what it does. " * 20)])],
    source=Wire.CHAT,
    system=[Text("You are a careful coding agent.")],
)
REPLY = Message("assistant", [Reasoning("Look at the grammar first."), Text("It parses. " * 30)])


def _exchange(metered: list[Metered], **changes: Any) -> Exchange:
    fields: dict[str, Any] = {
        "session": "s",
        "session_source": "header",
        "client_wire": Wire.CHAT,
        "upstream_wire": Wire.CHAT,
        "upstream": "local",
        "request": REQUEST,
        "response": None,
        "status": 200,
        "streamed": True,
        "forwarded_original": True,
        "elapsed_s": 0.1,
        "metered": metered,
    }
    fields.update(changes)
    return Exchange(**fields)


def _price(model: str, usage: Usage) -> float | None:
    """$1 per million input tokens, $2 per million output tokens, for model ``m`` only."""
    if model != "m":
        return None
    return (usage.input + 2 * usage.output) / 1_000_000


async def _recorder() -> Recorder:
    return Recorder(await Ledger.memory(), _price, clock=lambda: 1_000.0)


def test_a_reported_usage_stands_as_it_is() -> None:
    usage = Usage(input=7, output=3)
    assert counted(Metered(usage, REQUEST, REPLY)) == (usage, False)
    assert counted(Metered(Usage())) == (Usage(), False)  # a provider's zero is its word


def test_an_unreported_usage_is_counted_from_the_request_and_the_reply() -> None:
    usage, estimated = counted(Metered(None, REQUEST, REPLY))
    assert estimated
    assert usage.input == tokenizer.count_request(REQUEST) > 0
    assert usage.output == tokenizer.message_tokens(REPLY) > 0
    assert 0 < usage.reasoning == tokenizer.count_tokens("Look at the grammar first.")
    assert (usage.cached_input, usage.cache_write) == (0, 0)


def test_a_reply_is_counted_once_however_many_read_it() -> None:
    """The ledger, the usage a client is shown and a key's budget each ask: the count is made
    the first time and read after (the same object, not a count made again)."""
    metered = Metered(None, REQUEST, REPLY)
    first, estimated = counted(metered)
    assert estimated and counted(metered)[0] is first
    assert metered == Metered(None, REQUEST, REPLY)  # the count kept is no part of its value


def test_a_sum_with_an_unknown_part_is_unknown() -> None:
    assert total([Usage(input=1), Usage(output=2)]) == Usage(input=1, output=2)
    assert total([Usage(input=1), None]) is None
    assert total([]) == Usage()


async def test_a_row_without_reported_usage_is_estimated_and_priced_not_free() -> None:
    recorder = await _recorder()
    (row,) = recorder.rows(_exchange([Metered(None, REQUEST, REPLY)]))
    assert row.estimated
    assert row.input == tokenizer.count_request(REQUEST)
    assert row.output == tokenizer.message_tokens(REPLY)
    assert row.cost_usd == pytest.approx((row.input + 2 * row.output) / 1_000_000)
    assert row.cost_usd is not None and row.cost_usd > 0
    assert row.passthrough_input is not None and row.passthrough_input > 0


async def test_an_estimated_row_of_a_model_without_a_price_is_unpriced() -> None:
    recorder = await _recorder()
    exchange = _exchange([Metered(None, REQUEST, REPLY)], request=_renamed("local-llama"))
    (row,) = recorder.rows(exchange)
    assert row.estimated and row.cost_usd is None and row.input > 0


async def test_each_round_is_estimated_on_its_own() -> None:
    recorder = await _recorder()
    rounds = [Metered(Usage(input=500, output=40)), Metered(None, REQUEST, REPLY)]
    first, second = recorder.rows(_exchange(rounds, causes=["", "state"]))
    assert (first.estimated, first.input, first.output) == (False, 500, 40)
    assert second.estimated and second.input == tokenizer.count_request(REQUEST)


async def test_a_request_that_got_no_reply_is_no_estimate() -> None:
    """An upstream that answered with an error bills nothing: zero, and known to be."""
    recorder = await _recorder()
    (row,) = recorder.rows(_exchange([], status=502))
    assert not row.estimated and (row.input, row.output, row.cost_usd) == (0, 0, 0.0)


def _renamed(model: str) -> Request:
    return Request(model=model, messages=REQUEST.messages, source=Wire.CHAT, system=REQUEST.system)
