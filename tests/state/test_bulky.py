"""When a session passed through before its first boundary is offered ``recall`` for a
bulky tool output (``state.bulky``): the rule's worked examples, its direction, and the
window's share deciding where the money is even."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillstate.conversation import Message, Request, Text, Tool, ToolCall, ToolResult, Wire
from skillstate.state.bulky import (
    CONTEXT_TOKENS,
    WINDOW_SHARE,
    Viewer,
    outputs_verdict,
    recall_verdict,
)
from skillstate.state.epochs import AUTOMATIC_PRICES, BREAKPOINT_PRICES


def test_the_worked_examples() -> None:
    turn_two = recall_verdict(
        28_300, recall_tokens=150, cached_tokens=3_000, turns_so_far=2, prices=AUTOMATIC_PRICES
    )
    assert turn_two.starts and turn_two.saving == pytest.approx(31_080)
    assert turn_two.margin == pytest.approx(1_824)
    late = recall_verdict(
        28_300, recall_tokens=150, cached_tokens=120_000, turns_so_far=60, prices=AUTOMATIC_PRICES
    )
    assert not late.starts and late.horizon == 32
    assert (late.saving, late.margin) == (pytest.approx(10_230), pytest.approx(11_311.5))
    anthropic = recall_verdict(
        28_300, recall_tokens=150, cached_tokens=3_000, turns_so_far=2, prices=BREAKPOINT_PRICES
    )
    assert anthropic.starts and anthropic.saving == pytest.approx(37_367.5)


@given(
    saved=st.integers(0, 200_000),
    more=st.integers(1, 50_000),
    cached=st.integers(0, 500_000),
    turns=st.integers(0, 400),
    anthropic=st.booleans(),
)
def test_more_saved_never_turns_an_offer_down(
    saved: int, more: int, cached: int, turns: int, anthropic: bool
) -> None:
    prices = BREAKPOINT_PRICES if anthropic else AUTOMATIC_PRICES

    def offered(tokens: int) -> bool:
        return recall_verdict(
            tokens, recall_tokens=150, cached_tokens=cached, turns_so_far=turns, prices=prices
        ).starts

    if offered(saved):
        assert offered(saved + more)


def test_a_share_of_the_window_decides_where_the_money_is_even() -> None:
    saved = int(WINDOW_SHARE * CONTEXT_TOKENS)
    kwargs = {"recall_tokens": 150, "turns_so_far": 20, "prices": AUTOMATIC_PRICES}
    # the miss that makes the saving exactly nil: gain = miss
    even = int((saved - 150) * (1 + 20 * 0.1) / 0.9)
    assert recall_verdict(saved, cached_tokens=even, **kwargs).starts
    assert not recall_verdict(saved - 10, cached_tokens=even, **kwargs).starts
    assert not recall_verdict(saved, cached_tokens=even * 2, **kwargs).starts


def _loop(document: str, later: int = 0) -> Request:
    messages = [
        Message("user", [Text("Summarise the inventory.")]),
        Message("assistant", [ToolCall("c1", "fetch", "{}")]),
        Message("user", [ToolResult("c1", [Text(document)])]),
    ]
    for n in range(later):
        messages += [
            Message("assistant", [ToolCall(f"d{n}", "run", "{}")]),
            Message("user", [ToolResult(f"d{n}", [Text("ok")])]),
        ]
    tools = [Tool("fetch", "Fetch a document.", {}), Tool("run", "Run.", {})]
    return Request(model="m", messages=messages, source=Wire.CHAT, tools=tools)


def test_only_the_outputs_added_since_the_models_newest_reply_are_priced() -> None:
    seen: list[str] = []

    def saving(role: str, part: object) -> int:
        assert isinstance(part, ToolResult)
        seen.append(part.call_id)
        return 20_000 if part.call_id == "c1" else 0

    viewer = Viewer(saving, 16_000)
    fresh = outputs_verdict(_loop("x" * 80_000), viewer, 150, 2, AUTOMATIC_PRICES)
    assert fresh is not None and fresh.starts and seen == ["c1"]
    seen.clear()
    assert outputs_verdict(_loop("x" * 80_000, later=1), viewer, 150, 3, AUTOMATIC_PRICES) is None
    assert seen == ["d0"]  # the document came before the model's newest reply: not new
