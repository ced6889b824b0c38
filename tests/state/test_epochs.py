"""The epoch rule: a boundary comes when it pays for its one cache miss, within a few turns,
and keeps a long session's requests a small fraction of its transcript; an epoch holds while
the client's history only grows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest

from skillstate.conversation import Json, Message, Text, ToolCall, ToolResult
from skillstate.state.epochs import (
    BoundaryShape,
    CachePrices,
    expected_remaining_turns,
    prefix_extends,
    same_content,
)

ANTHROPIC_LIKE = CachePrices(input=1.0, cached_input=0.1, cache_write=1.25)
OPENAI_LIKE = CachePrices(input=1.0, cached_input=0.1)
CACHED: Json = {"type": "ephemeral"}
SHAPE = BoundaryShape(kept_tokens=4_200, sigma_tokens=1_500, sigma_growth=100)

# A simulated tool loop, token counts only ------------------------------------------------

HEAD = 3_200  # system prompt, tool definitions and the first user instruction
STEP = 1_050  # one step: a short tool call and its 1,000-token output
KEEP = 4  # turns a boundary keeps verbatim


def sigma_size(absorbed_turns: int) -> int:
    """Σ grows as it absorbs turns, up to the state's size bound."""
    return min(400 + 25 * absorbed_turns, 2_500) if absorbed_turns else 0


@dataclass
class Request:
    turn: int
    tokens: int
    transcript: int
    cost: float
    boundary: bool
    shape: BoundaryShape
    window: int


Policy = Callable[[int, int, BoundaryShape], bool]


def simulate(turns: int, prices: CachePrices, policy: Policy) -> list[Request]:
    """Bill each request of the loop the way a prefix cache does: the part shared with the
    previous request at the cached price, the rest at the write price."""
    window: list[int] = []  # turn numbers after the Σ message, each STEP tokens
    absorbed = epoch = 0
    previous: list[tuple[object, int]] = []
    requests: list[Request] = []
    for turn in range(1, turns + 1):
        window.append(turn)
        after = absorbed + max(0, len(window) - KEEP)
        shape = BoundaryShape(
            kept_tokens=STEP * min(KEEP, len(window)),
            sigma_tokens=sigma_size(after),
            sigma_growth=sigma_size(after) - sigma_size(absorbed),
        )
        size = STEP * len(window)
        boundary = len(window) > KEEP and policy(turn, size, shape)
        if boundary:
            absorbed, window, epoch = after, window[-KEEP:], epoch + 1
        segments: list[tuple[object, int]] = [("head", HEAD)]
        if absorbed:
            segments.append((("sigma", epoch), sigma_size(absorbed)))
        segments += [(("turn", n), STEP) for n in window]
        cached = 0
        for old, new in zip(previous, segments, strict=False):
            if old != new:
                break
            cached += new[1]
        tokens = sum(n for _, n in segments)
        cost = cached * prices.cached_input + (tokens - cached) * prices.write
        requests.append(Request(turn, tokens, HEAD + turn * STEP, cost, boundary, shape, size))
        previous = segments
    return requests


def epoch_rule(prices: CachePrices) -> Policy:
    def decide(turn: int, window: int, shape: BoundaryShape) -> bool:
        verdict = boundary_verdict(
            window, prices, shape, turns_so_far=turn, window_turns=window // STEP
        )
        return verdict.starts

    return decide


def never(turn: int, window: int, shape: BoundaryShape) -> bool:
    return False


def always(turn: int, window: int, shape: BoundaryShape) -> bool:
    return True


PRICES = pytest.mark.parametrize("prices", [ANTHROPIC_LIKE, OPENAI_LIKE], ids=["write+", "auto"])


@PRICES
def test_a_long_tool_loop_stays_a_small_fraction_of_its_transcript(prices: CachePrices) -> None:
    requests = simulate(100, prices, epoch_rule(prices))
    assert requests[-1].tokens < requests[-1].transcript / 3
    late = [r for r in requests if r.turn >= 70]
    assert all(r.tokens < r.transcript / 3 for r in late)
    assert sum(r.boundary for r in requests) >= 3


@PRICES
def test_epochs_bill_less_than_never_collapsing_and_than_rewriting_every_turn(
    prices: CachePrices,
) -> None:
    def billed(policy: Policy) -> float:
        return sum(r.cost for r in simulate(100, prices, policy))

    with_epochs = billed(epoch_rule(prices))
    assert with_epochs < billed(never)
    assert with_epochs < billed(always)


# The horizon ----------------------------------------------------------------------------


def test_a_session_is_expected_to_run_about_as_long_again() -> None:
    assert expected_remaining_turns(0) == 1.0
    assert expected_remaining_turns(30) == 30.0


# Whether the epoch still holds -----------------------------------------------------------


def history(
    *,
    first_cache: Json | None = CACHED,
    result_cache: Json | None = None,
    result: str = "def parse(): ...",
) -> list[Message]:
    return [
        Message("user", [Text("fix the parser", cache=first_cache)]),
        Message("assistant", [ToolCall("c1", "read_file", '{"path": "p.py"}')]),
        Message("tool", [ToolResult("c1", [Text(result, cache=result_cache)])]),
    ]


def test_a_history_that_only_grows_extends_the_epoch() -> None:
    grown = [*history(), Message("assistant", [Text("found it")])]
    assert prefix_extends(history(), history())
    assert prefix_extends(history(), grown)
    assert prefix_extends([], grown)


def test_moved_cache_markers_and_changed_hints_do_not_break_the_epoch() -> None:
    moved = history(first_cache=None, result_cache=CACHED)
    moved[1].hints["string"] = True
    assert prefix_extends(history(), moved)


def test_a_rewound_or_edited_history_breaks_the_epoch() -> None:
    assert not prefix_extends(history(), history()[:2])
    assert not prefix_extends(history(), history(result="def parse(): return 1"))
    renamed = history()
    renamed[0] = Message("developer", renamed[0].parts)
    assert not prefix_extends(history(), renamed)
    extra = history()
    extra[1].extra["name"] = "helper"
    assert not prefix_extends(history(), extra)


def test_same_content_tells_types_and_lengths_apart() -> None:
    assert not same_content(Text("a"), Message("user", [Text("a")]))
    assert not same_content([Text("a")], [Text("a"), Text("b")])
    assert same_content(Text("a", hints={"x": 1}), Text("a"))


# The rule priced by the upstream -----------------------------------------------------------

from skillstate.conversation import Wire  # noqa: E402
from skillstate.state.epochs import (  # noqa: E402
    NOISE_FLOOR,
    Handover,
    boundary_verdict,
    steady_horizon,
    upstream_prices,
)

GPT_41 = upstream_prices(Wire.CHAT, cached_input=0.25)
SONNET = upstream_prices(Wire.MESSAGES, cached_input=0.1, cache_write=1.25)
FIRST = BoundaryShape(
    kept_tokens=4_200, sigma_tokens=600, sigma_growth=600, added_tokens=500, prefix_miss=2_000
)


def test_each_wire_has_its_cache_style() -> None:
    assert upstream_prices(Wire.CHAT) == CachePrices(1.0, 0.1)
    assert upstream_prices(Wire.RESPONSES, cache_write=1.25).write == 1.0
    assert upstream_prices(Wire.MESSAGES) == CachePrices(1.0, 0.1, 1.25)


def test_the_worked_examples_of_the_docstring() -> None:
    openai = boundary_verdict(16_000, GPT_41, FIRST, turns_so_far=14, window_turns=14)
    assert openai.horizon == pytest.approx(2.51, abs=0.01)
    assert openai.starts and openai.saving == pytest.approx(1_240, abs=15)
    assert not boundary_verdict(7_000, GPT_41, FIRST, turns_so_far=6, window_turns=6).starts
    anthropic = boundary_verdict(16_000, SONNET, FIRST, turns_so_far=14, window_turns=14)
    assert anthropic.horizon == pytest.approx(4.9, abs=0.05)
    assert not anthropic.starts
    later = boundary_verdict(24_000, SONNET, FIRST, turns_so_far=21, window_turns=21)
    assert later.starts and later.saving > later.margin


def test_the_handover_example_of_the_docstring() -> None:
    gpt = upstream_prices(Wire.CHAT, cached_input=0.25, output=4.0)
    sonnet = upstream_prices(Wire.MESSAGES, cached_input=0.1, cache_write=1.25, output=5.0)
    for window, turns, costs, starts in [
        (16_000, 14, (6_100, 3_700), False),
        (40_000, 35, (12_100, 6_100), True),
    ]:
        handover = Handover(2_000 + window, 400, 300)
        shape = replace(FIRST, handover=handover)
        for prices, cost in zip((gpt, sonnet), costs, strict=True):
            assert handover.cost(prices) == pytest.approx(cost)
            verdict = boundary_verdict(
                window, prices, shape, turns_so_far=turns, window_turns=turns
            )
            plain = boundary_verdict(window, prices, FIRST, turns_so_far=turns, window_turns=turns)
            assert verdict.saving == pytest.approx(plain.saving - cost)
            assert verdict.starts is starts
    assert CachePrices(1.0, 0.1).output_price == 4.0  # no catalog figure: 4x the input


@pytest.mark.parametrize("prices", [GPT_41, SONNET, OPENAI_LIKE], ids=["gpt", "sonnet", "auto"])
def test_a_short_session_never_collapses_when_it_would_not_pay_back(prices: CachePrices) -> None:
    for turns in range(1, 13):
        window = 3_000 + 1_050 * turns  # the head and a tool loop's steps
        shape = replace(FIRST, kept_tokens=1_050 * min(4, turns))
        verdict = boundary_verdict(window, prices, shape, turns_so_far=turns, window_turns=turns)
        if verdict.starts:
            assert verdict.saving > max(NOISE_FLOOR, verdict.margin)
        # Within its horizon, a boundary that starts earns back its miss and more.
        assert not verdict.starts or verdict.saving > 0
    tiny = boundary_verdict(6_000, SONNET, FIRST, turns_so_far=3, window_turns=3)
    assert not tiny.starts and tiny.saving < 0


@pytest.mark.parametrize("prices", [GPT_41, SONNET], ids=["gpt", "sonnet"])
def test_a_long_session_with_bulky_tool_output_collapses(prices: CachePrices) -> None:
    shape = BoundaryShape(kept_tokens=12_000, sigma_tokens=1_500, sigma_growth=200)
    verdict = boundary_verdict(60_000, prices, shape, turns_so_far=40, window_turns=12)
    assert verdict.starts and verdict.saving > verdict.margin


def test_the_two_providers_ratios_decide_differently() -> None:
    # The same window: the cheap write of automatic caching pays at once, Anthropic's write
    # premium with its cheaper read does not yet.
    verdicts = [
        boundary_verdict(16_000, prices, FIRST, turns_so_far=14, window_turns=14)
        for prices in (GPT_41, SONNET)
    ]
    assert [v.starts for v in verdicts] == [True, False]


def test_the_horizon_is_half_the_cheapest_cycle_and_bounded_by_the_session() -> None:
    assert steady_horizon(SONNET, FIRST, 1_143) == pytest.approx(4.9, abs=0.05)
    assert steady_horizon(SONNET, FIRST, 0) == 32.0
    short = boundary_verdict(16_000, SONNET, FIRST, turns_so_far=2, window_turns=14)
    assert short.horizon == 2.0


def test_a_saving_within_noise_is_not_taken() -> None:
    shape = BoundaryShape(kept_tokens=4_000, sigma_tokens=500)
    # Just past break-even: a positive saving, under the margin.
    for window in range(4_000, 40_000, 50):
        verdict = boundary_verdict(window, OPENAI_LIKE, shape, turns_so_far=30, window_turns=10)
        if verdict.saving > 0:
            break
    assert 0 < verdict.saving <= verdict.margin and not verdict.starts
